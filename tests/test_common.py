"""scikit-learn's estimator checks for every public sparsekm estimator.

Each estimator class listed in ``sparsekm.models.__all__`` (and
``sparsekm.approx.__all__``) is instantiated with the fast parameters from
``_CHECK_PARAMS`` (if any) and run through ``parametrize_with_checks``.

``parametrize_with_checks`` does not yield every check of
:mod:`sklearn.utils.estimator_checks` (scikit-learn runs some only on its own
estimators): :func:`test_sklearn_checks_not_yielded` runs those that concern any
estimator -- DataFrame column names (``feature_names_in_``), ``get_feature_names_out``
and ``set_output`` of transformers -- on every public estimator. They need pandas
(in the ``test`` extra).
"""


import pytest
from sklearn.base import TransformerMixin
from sklearn.utils import estimator_checks as ec
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

# Checks that parametrize_with_checks does not yield (scikit-learn 1.6-1.9).
_EXTRA_CHECKS_ALL = ["check_dataframe_column_names_consistency"]
_EXTRA_CHECKS_TRANSFORMERS = [
    "check_get_feature_names_out_error",
    "check_transformer_get_feature_names_out",
    "check_transformer_get_feature_names_out_pandas",
    "check_set_output_transform",
    "check_set_output_transform_pandas",
    "check_global_output_transform_pandas",
]


def _extra_cases():
    for est in ESTIMATORS:
        names = _EXTRA_CHECKS_ALL + (
            _EXTRA_CHECKS_TRANSFORMERS if isinstance(est, TransformerMixin) else [])
        for name in names:
            yield pytest.param(est, name, id=f"{type(est).__name__}-{name}")


#: Checks an estimator is known to fail, by class name, each with its reason (none today:
#: scikit-learn's ``expected_failed_checks`` marks them xfail, strictly).
_EXPECTED_FAILED: dict[str, dict[str, str]] = {}


def _expected_failed_checks(estimator):
    return _EXPECTED_FAILED.get(type(estimator).__name__, {})


def test_every_public_estimator_is_checked():
    assert len(ESTIMATORS) >= 14
    assert set(_EXPECTED_FAILED) <= {type(e).__name__ for e in ESTIMATORS}


_ARRAY_API_CHILD = """
import json, sys, warnings
from sklearn.utils.estimator_checks import check_array_api_input
import tests.conftest as cf
import tests.test_common as tc
out = {}
for cls in cf.public_estimators():
    est = cls(**tc._CHECK_PARAMS.get(cls.__name__, {}))
    for kw in json.loads(sys.argv[1]):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check_array_api_input(cls.__name__, est, **kw)
            out[cls.__name__ + repr(sorted(kw.items()))] = "ok"
        except Exception as exc:
            out[cls.__name__ + repr(sorted(kw.items()))] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""
_array_api_results = {}


def _array_api_in_child(estimator, kwargs):
    """scikit-learn runs ``check_array_api_input`` only when ``SCIPY_ARRAY_API=1`` was set
    before scipy was imported (it changes scipy for the whole process), so in this process
    it would skip on every run: it runs, for every estimator at once, in one child process
    with that setting; each parametrization asserts its own estimator's outcome."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    key = type(estimator).__name__ + repr(sorted(kwargs.items()))
    if key not in _array_api_results:
        root = Path(__file__).resolve().parents[1]
        env = {**os.environ, "SCIPY_ARRAY_API": "1", "OMP_NUM_THREADS": "1"}
        env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
        res = subprocess.run([sys.executable, "-c", _ARRAY_API_CHILD, json.dumps([kwargs])],
                             capture_output=True, text=True, cwd=root, env=env, timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        _array_api_results.update(json.loads(res.stdout.strip().splitlines()[-1]))
    assert _array_api_results[key] == "ok", _array_api_results[key]


# The fast settings cap SLMC/SparseKFD at max_iter=5, so many of the checks' fits stop on
# the cap: the checks test the API conventions, not convergence (the cap's warning is
# asserted in test_slmc.py / test_slmc_shared.py); only that exact warning is ignored.
_CAP_WARNING = ("ignore:.* stopped at max_iter=5 L-BFGS iterations over Z before W\\(Z\\) "
                "converged:sklearn.exceptions.ConvergenceWarning")


@pytest.mark.filterwarnings(_CAP_WARNING)
@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks,
                         xfail_strict=True)
def test_sklearn_compatible_estimator(estimator, check):
    name = getattr(check, "func", check).__name__
    if name == "check_array_api_input" and "SCIPY_ARRAY_API" not in __import__("os").environ:
        _array_api_in_child(estimator, dict(getattr(check, "keywords", {})))
        return
    check(estimator)


# check_set_output_transform_pandas / check_global_output_transform_pandas deliberately fit
# on a DataFrame and transform an array (and the reverse): scikit-learn's own
# ``check_feature_names_in`` warns then, for its own transformers too (PCA does).
@pytest.mark.filterwarnings(
    "ignore:X (does not have valid|has) feature names, but \\w+ was fitted with(out)? "
    "feature names:UserWarning")
@pytest.mark.filterwarnings(_CAP_WARNING)
@pytest.mark.parametrize("estimator, check_name", list(_extra_cases()))
def test_sklearn_checks_not_yielded(estimator, check_name):
    pytest.importorskip("pandas")
    getattr(ec, check_name)(type(estimator).__name__, estimator)


def test_the_extra_checks_are_really_not_yielded():
    """If scikit-learn starts yielding one of them, drop it from the extra list (read through
    scikit-learn's public ``estimator_checks_generator``)."""
    for est in ESTIMATORS[:3]:
        yielded = {getattr(c, "func", c).__name__
                   for _, c in ec.estimator_checks_generator(est, legacy=True)}
        assert "check_fit2d_1sample" in yielded  # the generator really lists the checks
        assert not yielded & set(_EXTRA_CHECKS_ALL + _EXTRA_CHECKS_TRANSFORMERS)
