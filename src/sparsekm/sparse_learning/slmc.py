"""Deprecated alias of :mod:`sparsekm.sparse_learning.svm_marginal` (renamed after its
mathematics: the fixed-``Z`` SVM's marginal function ``W(Z)``, its gradient, L-BFGS over
``Z``; the estimators live in :mod:`sparsekm.models.slmc`).

``import sparsekm.sparse_learning.slmc`` keeps working for one release and emits a
:class:`DeprecationWarning`; import :mod:`sparsekm.sparse_learning` (or its
``svm_marginal`` module) instead.
"""

import warnings

from .svm_marginal import *  # noqa: F401,F403
from .svm_marginal import __all__  # noqa: F401


def __getattr__(name):
    from . import svm_marginal

    return getattr(svm_marginal, name)


warnings.warn("sparsekm.sparse_learning.slmc is deprecated; import "
              "sparsekm.sparse_learning.svm_marginal instead.", DeprecationWarning, stacklevel=2)
