"""scikit-learn's estimator checks for every public sparsekm estimator.

Each estimator class listed in ``sparsekm.models.__all__`` (and
``sparsekm.approx.__all__``) is instantiated with the fast parameters from
``_CHECK_PARAMS`` (if any) and run through ``parametrize_with_checks``.
"""

import inspect

import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import sparsekm.approx
import sparsekm.models

# Fast settings for the checks (small problems, few iterations), by class name.
_CHECK_PARAMS: dict[str, dict] = {
    "SparseLargeMarginClassifier": {"n_vectors": 3, "max_iter": 5},
    "SparseKFD": {"n_vectors": 3, "max_iter": 5},
    "RSVM": {"n_vectors": 8},
    "ModifiedRSVM": {"n_vectors": 8},
    "ModifiedRS": {"n_vectors": 3},
    "ReducedSetClassifier": {"n_vectors": 5, "n_init": 2, "max_iter": 30, "random_state": 0},
    "ReducedSetRegressor": {"n_vectors": 5, "n_init": 2, "max_iter": 30, "random_state": 0},
}


def _all_estimators():
    out = []
    for module in (sparsekm.models, sparsekm.approx):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and obj not in out:
                out.append(obj)
    return out


ESTIMATORS = [cls(**_CHECK_PARAMS.get(cls.__name__, {})) for cls in _all_estimators()]


if ESTIMATORS:

    @parametrize_with_checks(ESTIMATORS)
    def test_sklearn_compatible_estimator(estimator, check):
        check(estimator)

else:

    def test_no_estimators_yet():
        pytest.skip("no estimators are public yet")
