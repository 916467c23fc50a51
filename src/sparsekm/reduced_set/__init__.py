"""Reduced-set methods: approximate a kernel expansion by one with few terms.

Functions (the mathematics; estimators in :mod:`sparsekm.models.reduced_set`):

* :func:`optimal_coefficients` -- Proposition 8, ``beta = (K^z)^-1 K^zx alpha``;
* :func:`construct` / :func:`refine` -- RS construction by iterated one-term
  approximations (phase 1) and joint L-BFGS over all ``(z_j, beta_j)`` (phase 2),
  separately per output or with one shared set of vectors;
* :func:`select_kpca`, :func:`select_backward`, :func:`select_l1`, :func:`select_l1_multi`,
  :func:`exact_reduction` -- RS selection among the original vectors;
* :func:`refit_intercept` -- the training-error optimal threshold;
* :func:`reduce_expansion` -- any of the above by name;
  :func:`reduce_many` -- several independent expansions (e.g. one-vs-rest
  classifiers) in parallel through joblib, :func:`stack_results` -- their
  results as one multi-output result.
"""

from ._base import (
    ReducedSetResult,
    ReducedSetWarning,
    approximation_error,
    optimal_coefficients,
    optimal_threshold,
    refit_intercept,
)
from ._one_term import one_term_shared
from .construction import construct, refine
from .reduction import reduce_expansion, reduce_many, stack_results
from .selection import (
    exact_reduction,
    select_backward,
    select_kpca,
    select_l1,
    select_l1_multi,
)

__all__ = [
    "ReducedSetResult",
    "ReducedSetWarning",
    "approximation_error",
    "optimal_coefficients",
    "optimal_threshold",
    "refit_intercept",
    "one_term_shared",
    "construct",
    "refine",
    "select_kpca",
    "select_backward",
    "select_l1",
    "select_l1_multi",
    "exact_reduction",
    "reduce_expansion",
    "reduce_many",
    "stack_results",
]
