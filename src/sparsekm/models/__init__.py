"""scikit-learn compatible estimators: thin shells over sparsekm's functions.

Every estimator listed in ``__all__`` is checked with
``sklearn.utils.estimator_checks.parametrize_with_checks`` in ``tests/test_common.py``.
"""

from .approx_svm import ApproxSVC
from .expansion_models import (
    ExpansionOutlierDetector as ExpansionOutlierDetector,  # built, not fitted
)
from .expansion_models import ExpansionRegressor
from .expansion_models import ExpansionTransformer as ExpansionTransformer  # built, not fitted
from .fast_rvm import FastRVC
from .kernel_pca import KernelPCA, linear_pca_denoise
from .kfd import ApproxKFD, KernelFisherDiscriminant
from .randomized_kpca import RandomizedKernelPCA
from .reduced_set import ReducedSetClassifier, ReducedSetRegressor, reduce_kernel_pca
from .rvm import RVC
from .slmc import RSVM, SLMC, ModifiedRS, ModifiedRSVM, SparseKFD, SparseLargeMarginClassifier

__all__: list[str] = [
    "ApproxSVC",
    "ExpansionRegressor",
    "ApproxKFD",
    "KernelFisherDiscriminant",
    "KernelPCA",
    "linear_pca_denoise",
    "RandomizedKernelPCA",
    "ReducedSetClassifier",
    "ReducedSetRegressor",
    "reduce_kernel_pca",
    "RVC",
    "FastRVC",
    "SparseLargeMarginClassifier",
    "SLMC",
    "SparseKFD",
    "RSVM",
    "ModifiedRSVM",
    "ModifiedRS",
]
