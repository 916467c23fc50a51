"""Deprecated alias of :mod:`sparsekm.sparse_learning` (the module was split and renamed).

``import sparsekm.direct`` keeps working and emits a :class:`DeprecationWarning`;
import from :mod:`sparsekm.sparse_learning` instead.
"""

import warnings

from .sparse_learning import *  # noqa: F401,F403
from .sparse_learning import __all__  # noqa: F401

warnings.warn("sparsekm.direct is deprecated; import sparsekm.sparse_learning instead.",
              DeprecationWarning, stacklevel=2)
