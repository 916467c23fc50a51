"""Deprecated alias of :mod:`sparsekm.sparse_learning` (the module was split and renamed).

``import sparsekm.direct`` keeps working and emits a :class:`DeprecationWarning`;
import from :mod:`sparsekm.sparse_learning` instead.
"""

import warnings

from .sparse_learning import *  # noqa: F401,F403
from .sparse_learning import __all__  # noqa: F401
from .sparse_learning.fixed_z import (  # noqa: F401  (private names used by old callers)
    _check_C,
    _check_Z,
    _ipm_svm,
    _linear_svm,
    _svm_values,
)
from .sparse_learning.sparse_kfd import _skfd_parts  # noqa: F401

warnings.warn("sparsekm.direct is deprecated; import sparsekm.sparse_learning instead.",
              DeprecationWarning, stacklevel=2)
