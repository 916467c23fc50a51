"""Direct sparse kernel learning (Wu, Schölkopf, Bakır, JMLR 2006).

The weight vector of a kernel machine is constrained to ``w = sum_j beta_j Phi(z_j)``
with ``N_z`` free expansion vectors ``Z`` (eq. 11). For fixed ``Z`` the learning
problem stays convex; its optimal value is the *marginal function* ``W(Z)``
(eq. 12-15), minimised over ``Z`` with L-BFGS. The mathematics, shared by every
estimator of :mod:`sparsekm.models.slmc`:

* :mod:`~sparsekm.sparse_learning.fixed_z` -- the SVM for fixed ``Z`` (eq. 28-45;
  also MRS and RSVM) and the full-SVM references;
* :mod:`~sparsekm.sparse_learning.svm_marginal` -- the SLMC gradient (eq. 46) and the
  L-BFGS over ``Z``, for one binary problem or several sharing ``Z``;
* :mod:`~sparsekm.sparse_learning.sparse_kfd` -- the sparse kernel Fisher
  discriminant (appendix A, eq. 57-63).

(Formerly the single module ``sparsekm.direct``, which remains as a deprecated alias.)
"""

from .fixed_z import (
    FixedZSolution,
    SingularKzError,
    aggregate_duplicates,
    fixed_z_svm,
    rs_objective,
    unique_rows,
    whitening_transform,
)
from .full_svm import full_svm_expansion, svm_dual_objective
from .sparse_kfd import skfd_gradient, skfd_objective, skfd_optimize
from .svm_marginal import (
    OptimizeResult,
    slmc_gradient,
    slmc_objective,
    slmc_optimize,
    slmc_shared_objective,
    slmc_shared_optimize,
)

__all__ = [
    "FixedZSolution",
    "whitening_transform",
    "fixed_z_svm",
    "slmc_objective",
    "slmc_gradient",
    "slmc_optimize",
    "slmc_shared_objective",
    "slmc_shared_optimize",
    "skfd_objective",
    "skfd_gradient",
    "skfd_optimize",
    "full_svm_expansion",
    "svm_dual_objective",
    "rs_objective",
    "OptimizeResult",
    "unique_rows",
    "aggregate_duplicates",
    "SingularKzError",
]
