"""Parameter constraints shared by sparsekm estimators (scikit-learn's ``_parameter_constraints``).

Each estimator declares ``_parameter_constraints`` in scikit-learn's vocabulary: ``fit``
validates them first (scikit-learn's ``_fit_context``), and :func:`sparsekm.load` validates
every constructor parameter read from a file with the same rules
(``sklearn.utils._param_validation``) before building the estimator.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .kernels import KERNEL_NAMES, Kernel

__all__ = ["KERNEL", "POSITIVE", "NON_NEGATIVE", "POSITIVE_INT", "REAL", "RANDOM_STATE",
           "N_JOBS", "BACKEND", "BOOLEAN"]

POSITIVE = [Interval(Real, 0, None, closed="neither")]
NON_NEGATIVE = [Interval(Real, 0, None, closed="left")]
POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]
REAL = [Interval(Real, None, None, closed="neither")]
RANDOM_STATE = ["random_state", np.random.Generator]
N_JOBS = [Integral, None]
BACKEND = [StrOptions({"numpy", "torch"}), None]
BOOLEAN = ["boolean"]

class _KernelName(StrOptions):
    """A kernel's name as :func:`sparsekm.kernels.resolve_kernel` reads it (any case), so
    that a file naming no kernel (``kernel="os.system"``) is refused when loaded."""

    def __init__(self):
        super().__init__(set(KERNEL_NAMES))

    def is_satisfied_by(self, val):
        return isinstance(val, str) and val.lower() in self.options


#: ``kernel``, ``gamma``, ``degree`` and ``coef0`` (see :func:`sparsekm.kernels.resolve_kernel`).
KERNEL = {
    "kernel": [Kernel, _KernelName(), None],
    "gamma": [StrOptions({"scale", "auto"}), *POSITIVE],
    "degree": POSITIVE_INT,
    "coef0": REAL,
}
