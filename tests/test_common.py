"""scikit-learn's estimator checks for every public sparsekm estimator.

Each estimator class listed in ``sparsekm.models.__all__`` (and
``sparsekm.approx.__all__``) is instantiated with the fast parameters from
``_CHECK_PARAMS`` (if any) and run through ``parametrize_with_checks``.
"""


import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from .conftest import public_estimators

# Fast settings for the checks (small problems, few iterations), by class name.
_CHECK_PARAMS: dict[str, dict] = {
    "ReducedSetClassifier": {"n_vectors": 5, "n_init": 2, "max_iter": 30, "random_state": 0},
    "ReducedSetRegressor": {"n_vectors": 5, "n_init": 2, "max_iter": 30, "random_state": 0},
    "SparseLargeMarginClassifier": {"n_vectors": 3, "max_iter": 5},
    "SparseKFD": {"n_vectors": 3, "max_iter": 5},
    "RSVM": {"n_vectors": 8},
    "ModifiedRSVM": {"n_vectors": 8},
    "ModifiedRS": {"n_vectors": 3},
    "RVC": {"max_iter": 50},
}


ESTIMATORS = [cls(**_CHECK_PARAMS.get(cls.__name__, {})) for cls in public_estimators()]


if ESTIMATORS:

    @parametrize_with_checks(ESTIMATORS)
    def test_sklearn_compatible_estimator(estimator, check):
        check(estimator)

else:

    def test_no_estimators_yet():
        pytest.skip("no estimators are public yet")
