"""scikit-learn compatible estimators: thin shells over sparsekm's functions.

Every estimator listed in ``__all__`` is checked with
``sklearn.utils.estimator_checks.parametrize_with_checks`` in ``tests/test_common.py``.
"""

from .kernel_pca import KernelPCA, linear_pca_denoise

__all__: list[str] = ["KernelPCA", "linear_pca_denoise"]
