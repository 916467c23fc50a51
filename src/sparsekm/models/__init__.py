"""scikit-learn compatible estimators: thin shells over sparsekm's functions.

Every estimator listed in ``__all__`` is checked with
``sklearn.utils.estimator_checks.parametrize_with_checks`` in ``tests/test_common.py``.
"""

from .slmc import (
    RSVM,
    SLMC,
    ModifiedRS,
    ModifiedRSVM,
    SparseKFD,
    SparseLargeMarginClassifier,
)

__all__: list[str] = [
    "SparseLargeMarginClassifier",
    "SLMC",
    "SparseKFD",
    "RSVM",
    "ModifiedRSVM",
    "ModifiedRS",
]
