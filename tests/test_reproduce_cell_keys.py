"""The reproductions' cell keys are keys of values, not of Python types, and of code in
the order it is given."""

import numpy as np

from sparsekm.reproduce._cache import CellCache, code_key


def test_numpy_and_python_forms_of_one_parameter_give_one_key():
    python = {"C": 1.0, "sizes": [1, 2, 3], "ratio": 0.25}
    numpy = {"ratio": np.float64(0.25), "sizes": np.array([1, 2, 3]), "C": np.float64(1.0)}
    assert CellCache.key("cell", numpy, 0, "code") == CellCache.key("cell", python, 0, "code")
    assert CellCache.key("cell", {**python, "sizes": [1, 2]}, 0, "code") != CellCache.key(
        "cell", python, 0, "code")


def test_the_code_key_depends_on_which_code_and_in_what_order():
    assert code_key(np.mean, np.median) == code_key(np.mean, np.median)
    assert code_key(np.mean, np.median) != code_key(np.median, np.mean)
    assert code_key(np.mean) != code_key(np.mean, np.median)
