"""The best small classifier in one call: :func:`compress`.

:func:`compress` makes a fitted kernel classifier cheap to apply. Given a *budget*
(``n_vectors``: distinct kernel evaluations per prediction, all classes together) it
tries several ways to build a classifier within it -- reduced sets of the machine itself
(construction, eq. 74-77; plus phase 2) and machines trained directly with few vectors
(shared SLMC from the reduced set or from the peer's landmarks; linear SVMs on the
features ``K(x, Z) K_zz^{-1/2}`` of a uniform subset, the k-means centres or a greedy
basis, i.e. the Nystrom + LinearSVC peers written as kernel expansions) -- and returns
the one with the lowest validation error, with a report of every candidate. Given a
*tolerance* (``max_error_increase``) it returns the smallest budget whose validation
error stays within it.

The package: ``_search`` (the orchestration), ``_candidates`` (one class per candidate,
one interface), ``_report`` (:class:`CompressReport`, its table and plot), ``_model``
(:class:`CompressedClassifier`), ``_prefixes`` (:func:`construct_prefixes`: one
construction whose prefixes give every smaller reduced set).
"""

# re-exported (the package's public names and constants, as before it was one module)
from ..approx.nystroem import nystroem_features, nystroem_normalization
from ._candidates import (  # noqa: F401
    C_GRID,
    C_SEARCH_ROWS,
    CANDIDATES,
    FULL,
    MIN_L1_PER_MACHINE,
    SCREEN,
    SCREEN_ROWS,
    SLMC_N_C,
    Candidate,
    CandidateFit,
    Fidelity,
    Problem,
    Variant,
)
from ._model import CompressedClassifier
from ._prefixes import construct_prefixes
from ._report import CompressCurve, CompressReport
from ._search import (  # noqa: F401
    AUTO_METHODS,
    DEFAULT_CV,
    DEFAULT_MAX_ERROR_INCREASE,
    METHOD_LABELS,
    REBUILD_SE,
    SCREEN_MIN_MARGIN,
    SCREEN_SE,
    WARN_MARGIN,
    _rebuild_margin,
    compress,
)

__all__ = ["compress", "CompressReport", "CompressedClassifier", "CompressCurve",
           "construct_prefixes", "nystroem_features", "nystroem_normalization",
           "AUTO_METHODS", "Candidate", "CandidateFit", "Fidelity", "Problem", "Variant"]
