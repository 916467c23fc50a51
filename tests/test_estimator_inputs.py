"""What every estimator refuses at fit and set_output: a kernel name that names no kernel
(a ValueError from its parameter constraints), labels mixing numbers and strings (a
TypeError), polars output where polars is missing (an ImportError)."""

import inspect

import numpy as np
import pytest
from sklearn.utils._param_validation import validate_parameter_constraints

from sparsekm import models


def _classes_with(param):
    return [getattr(models, n) for n in models.__all__
            if inspect.isclass(getattr(models, n))
            and param in inspect.signature(getattr(models, n)).parameters]


@pytest.mark.parametrize("cls", _classes_with("kernel"), ids=lambda c: c.__name__)
def test_a_kernel_name_that_names_no_kernel_is_a_value_error(cls):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    est = cls(kernel="os.system")
    # refused first thing in fit by the estimator's constraints (``_fit_context``)
    with pytest.raises(ValueError, match=r"'kernel' parameter of \w+ must be .* or None\. "
                                         r"Got 'os.system' instead"):
        est.fit(X, y)
    assert not hasattr(est, "n_features_in_")
    # and where sparsekm checks parameters (sparsekm.load builds estimators from files
    # with these constraints): refused there, the known names in any case accepted
    constraints = cls._parameter_constraints
    assert "kernel" in constraints
    with pytest.raises(ValueError, match="kernel"):
        validate_parameter_constraints({"kernel": constraints["kernel"]},
                                       {"kernel": "os.system"}, caller_name=cls.__name__)
    for ok in ("rbf", "RBF", "poly", None):
        validate_parameter_constraints({"kernel": constraints["kernel"]}, {"kernel": ok},
                                       caller_name=cls.__name__)


def _classifiers():
    from sklearn.svm import SVC

    out = []
    for name in models.__all__:
        cls = getattr(models, name)
        if not inspect.isclass(cls) or not hasattr(cls, "predict") or "Regressor" in name:
            continue
        params = inspect.signature(cls).parameters
        kw = {"estimator": SVC()} if "estimator" in params else {}
        if "n_vectors" in params:
            kw["n_vectors"] = 3
        out.append(pytest.param(cls, kw, id=name))
    return out


@pytest.mark.parametrize("cls, kw", _classifiers())
@pytest.mark.parametrize("as_object", [False, True])
def test_labels_mixing_numbers_and_strings_get_sparsekms_type_error(cls, kw, as_object):
    X = np.random.default_rng(0).normal(size=(30, 3))
    y = [1, "a"] * 15  # a list: numpy would make it ['1', 'a'] and predict "1"
    if as_object:
        y = np.array(y, dtype=object)
    with pytest.raises(TypeError, match=r"labels in y mix types \(number 1 and string 'a'\)"):
        cls(**kw).fit(X, y)
    # one type is fine, numbers or strings
    cls(**kw).fit(X, np.array(["b", "a"] * 15, dtype=object))


def test_check_label_types_lets_homogeneous_labels_through():
    from sparsekm.utils.validation import check_label_types

    for y in ([1, 2, 3], np.arange(5), ["a", "b"], np.array(["a", 1.5], dtype=str),
              np.array([1, 2.5], dtype=object), [True, False], None):
        check_label_types(y)
    with pytest.raises(TypeError, match="bool True and string 'x'"):
        check_label_types(np.array([True, "x"], dtype=object))


@pytest.mark.parametrize("cls", [models.KernelPCA, models.RandomizedKernelPCA,
                                 __import__("sparsekm.approx", fromlist=["GreedyBasis"])
                                 .GreedyBasis], ids=lambda c: c.__name__)
def test_polars_output_is_refused_where_polars_is_missing(cls, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "polars" else real(name, *a))
    est = cls()
    with pytest.raises(ImportError, match=r"set_output\(transform='polars'\): polars is not "
                                          "installed"):
        est.set_output(transform="polars")
    assert est.set_output(transform="pandas") is est  # the other containers as before
    assert est.set_output(transform="default") is est
