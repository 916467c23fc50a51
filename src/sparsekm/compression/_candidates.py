"""The candidates of :func:`sparsekm.compress`: one small class each, one interface.

A candidate has a ``name``, an estimate of its ``cost`` from the problem's size (kernel
evaluations: a count, never seconds), the ``fidelity`` it is screened at, and
``fit(problem, budget, fidelity)`` returning a :class:`CandidateFit` (the fitted model,
its validation error, the variant chosen, notes). Everything a fit needs comes from the
:class:`Problem` (data, original machine, seed, the ``error`` function, the optional
deadline); a fit reads no clock unless the problem carries a deadline. A regressor
candidate fits the same interface with ``Problem.error`` a regression loss.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_random_state

from ..expansion import KernelExpansion
from ..models.reduced_set import ReducedSetClassifier
from ..utils.optimize import DEADLINE_STOP
from ._prefixes import construct_prefixes

__all__ = ["Fidelity", "SCREEN", "FULL", "Problem", "Split", "Candidate", "CandidateFit",
           "Variant", "CANDIDATES", "C_GRID"]

#: C values tried (on validation) by the direct methods at full fidelity (the same grid
#: as the peers of ``benchmarks/bench_pareto.py``).
C_GRID = (0.1, 1.0, 10.0, 100.0)
#: The fixed-Z linear SVMs (uniform-, kmeans-, greedy-svm) search their C on a stratified
#: subsample of this many rows when that saves row-fits: a LinearSVC fit costs about
#: linearly in the rows, so with k = len(C_GRID) values the subsample costs
#: k * C_SEARCH_ROWS + n row-fits against k * n on all n rows; it is used when
#: (k - 1) * n > k * C_SEARCH_ROWS (above 13,333 rows with four values). The chosen C is
#: then fitted once on all rows (its validation error is the one reported and compared).
C_SEARCH_ROWS = 10_000
#: Training rows a screening fit uses at most (a stratified subsample).
SCREEN_ROWS = 2_000
#: Fraction of the iterations (SLMC's L-BFGS over Z, the joint refine) a screening fit runs.
SCREEN_ITER_FRACTION = 0.25
#: L-BFGS iterations over Z of the SLMC candidates at full fidelity (the SLMC's default).
SLMC_MAX_ITER = 100
#: C values of the SLMC candidates at full fidelity: the grid values nearest (in log C)
#: to the original machine's C (Wu et al. keep the SVM's C), nearest first.
SLMC_N_C = 2
#: Iterations of the joint refine (phase 2) at full fidelity.
REFINE_MAX_ITER = 300
#: The work bound of the default search (``method="auto"``, issue 39): an iterative
#: candidate (construct+refine, the SLMCs) may spend at most ``max(WORK_RATIO * P,
#: WORK_FLOOR)`` estimated kernel evaluations in its full fit, ``P`` the estimate of the
#: peer's own fit with its C search (``kmeans-svm`` plus ``uniform-svm`` at full fidelity:
#: Nystrom landmarks + LinearSVC, both landmark kinds, every C). Its iterations are cut in
#: proportion; one whose bound leaves less than ``SCREEN_ITER_FRACTION`` of its iterations
#: (it could not run past its own screening) is refused. ``WORK_RATIO = 3``: the issue's
#: CPU target is three times the peer.
WORK_RATIO = 3.0
#: ... and never below this many estimated kernel evaluations (the target's 30 s floor:
#: the peer's own estimate on USPS at 1,000 vectors, 9.3e7, took 34 CPU s, so 30 s is
#: about 8e7 of them). Counts, never seconds: no clock is read.
WORK_FLOOR = 8e7
#: Passes over the training rows the k-means landmarks are estimated to cost (the k-means
#: peer's cost estimate here and in ``_any.peer_work``).
KMEANS_PASSES = 10.0
#: select-l1 with separate sets refuses below this many vectors per binary machine: an
#: L1 path cut at a handful of support vectors per pair keeps no usable machine (84 % test
#: error at 5 per pair on a one-vs-one SVC, 64 % on USPS at 25 per class).
MIN_L1_PER_MACHINE = 10
#: At a budget of at least this fraction of the original machine's ``N`` distinct vectors
#: the default search (``method="auto"``) *selects* its reduced set from them by optimal
#: greedy backward elimination (*Input space vs. feature space*, sec. V-C: eq. 63 with
#: Proposition 8's coefficients; :func:`~sparsekm.reduced_set.select_backward`) instead of
#: constructing it (eq. 74-77): removing at most half of the vectors costs ``O(N^2 d +
#: (N - m) N^2)``, against the construction's ``m`` fixed-point searches over ``N + m``
#: terms. Measured on USPS-784 (1,768 support vectors, 45 one-vs-one outputs) at 1,000
#: vectors: 3 CPU s against 79 s, relative residuals 0.05-1.3 % per output, and the same
#: validation error (1.83 %, the original's); see docs/reduced_set.md.
SELECT_FRACTION = 0.5
#: ... while its ``N x N`` Gram matrix and inverse stay small (N at most this: 2 x 288 MB).
SELECT_MAX_TERMS = 6000


@dataclass(frozen=True)
class Fidelity:
    """How much work a fit may do: counts only.

    Attributes
    ----------
    name : str
        ``"screen"`` or ``"full"``.
    rows : int or None
        Training rows used at most (a stratified subsample; None: all).
    n_C : int or None
        C values tried (None: the candidate's full list).
    iter_fraction : float
        Fraction of the candidate's iterations (L-BFGS over Z, refine).
    """

    name: str
    rows: int | None
    n_C: int | None
    iter_fraction: float


#: The screening fidelity: at most ``SCREEN_ROWS`` rows, one C value, a quarter of the
#: iterations.
SCREEN = Fidelity("screen", SCREEN_ROWS, 1, SCREEN_ITER_FRACTION)
#: The full fidelity.
FULL = Fidelity("full", None, None, 1.0)


@dataclass
class Split:
    """Data one candidate is built on (``X_fit``) and judged on (``X_eval``)."""

    X_fit: object
    y_fit: object
    X_eval: object
    y_eval: object
    exact: object            # the original machine trained on X_fit (None: not available)
    cache: dict = field(default_factory=dict)


def classification_error(model, X, y):
    """Fraction of ``X``'s rows that ``model`` predicts wrong (the default ``error``)."""
    return float(np.mean(model.predict(X) != y))


@dataclass
class Problem:
    """Everything a candidate's fit needs.

    Attributes
    ----------
    exact : ExpansionClassifier
        The original machine (on all the data given).
    splits : list of Split
        The validation split, or the cross-validation folds.
    final : Split or None
        Cross-validation: the whole training set (the model returned is rebuilt there).
    shared, n_init, max_iter, seed
        The reduced-set construction's settings and the seed of every random draw.
    source_C : float or None
        The original machine's C (the SLMC tries the grid values nearest it first).
    deadline : Deadline or None
        ``time_limit`` (None: no clock is read).
    error : callable ``error(model, X, y) -> float``
        The validation rule's loss (classification error; a regressor problem passes
        its own).
    bounded : bool
        Whether the iterative candidates' work is bounded by :meth:`work_limit` (the
        default search, ``method="auto"``).
    """

    exact: object
    splits: list
    final: object
    shared: bool
    n_init: int
    max_iter: int
    seed: int
    source_C: float | None = None
    deadline: object = None
    error: object = classification_error
    bounded: bool = False

    def peer_work(self, n_vectors):
        """The estimated work of the peer at ``n_vectors`` (Nystrom k-means and uniform +
        LinearSVC, every C, all rows); 0 without training data."""
        if not self.has_train:
            return 0.0
        return sum(CANDIDATES[m].cost(self, n_vectors, FULL)
                   for m in ("kmeans-svm", "uniform-svm"))

    def work_limit(self, n_vectors):
        """The most estimated work an iterative candidate's full fit may do at
        ``n_vectors`` (``WORK_RATIO`` x the peer's, at least ``WORK_FLOOR``); None when the
        search is not bounded (a method named explicitly)."""
        if not self.bounded:
            return None
        return max(WORK_RATIO * self.peer_work(n_vectors), WORK_FLOOR)

    @property
    def psi(self):
        return self.exact.expansion

    @property
    def kernel(self):
        return self.psi.kernel

    @property
    def classes(self):
        return np.asarray(self.exact.classes)

    @property
    def multi(self):
        return self.psi.is_multioutput and self.psi.n_outputs > 1

    @property
    def has_train(self):
        return self.splits[0].X_fit is not None

    @property
    def n_train(self):
        return 0 if not self.has_train else max(s.X_fit.shape[0] for s in self.splits)

    @property
    def n_full(self):
        return int(self.psi.merge_duplicates().n_terms)

    def expired(self):
        return self.deadline is not None and self.deadline.expired()

    def per_output(self, n_vectors):
        """Vectors per reduced set at budget ``n_vectors`` (separate sets: per binary machine)."""
        if self.shared or not self.multi:
            return n_vectors
        return max(1, n_vectors // self.psi.n_outputs)

    def C_order(self):
        """``C_GRID`` nearest (in log C) to the original's C first (ties: grid order);
        without a source C, nearest to 1."""
        ref = self.source_C if self.source_C is not None else 1.0
        return sorted(C_GRID, key=lambda C: abs(np.log(C) - np.log(ref)))

    def rows(self, split, fidelity, n_vectors):
        """Rows of ``split.X_fit`` a fit at ``fidelity`` and budget ``n_vectors`` uses: all
        (None), or a sorted stratified subsample of ``max(fidelity.rows, 4 n_vectors)``."""
        size = None if fidelity.rows is None else max(fidelity.rows, 4 * n_vectors)
        return _subsample(split, size, self.seed, "rows")


def _subsample(split, size, seed, tag):
    n = split.X_fit.shape[0]
    if size is None or n <= size:
        return None
    key = (tag, size)
    if key not in split.cache:
        from sklearn.model_selection import train_test_split
        idx = np.arange(n)
        try:
            keep = train_test_split(idx, train_size=size, stratify=split.y_fit,
                                    random_state=seed)[0]
        except ValueError:  # a class too small to stratify: a plain uniform draw
            keep = check_random_state(seed).choice(n, size, replace=False)
        split.cache[key] = np.sort(keep)
    return split.cache[key]


def _take(split, rows):
    if rows is None:
        return split.X_fit, split.y_fit
    return split.X_fit[rows], split.y_fit[rows]


@dataclass(frozen=True)
class Variant:
    """One setting a candidate tries on validation: a C value (direct methods) or the
    thresholds kept / re-fitted (reduced sets). ``label`` is what the report shows; the
    numbers travel as numbers."""

    label: str
    C: float | None = None
    refit_thresholds: bool = False


@dataclass
class CandidateFit:
    """What :meth:`Candidate.fit` returns."""

    model: object                      # the fitted classifier (on all the data of the fit)
    variant: Variant                   # the setting chosen (``variant.label``: "C=10")
    error: float                       # validation error (CV: mean over the folds)
    fidelity: str                      # "screen" or "full"
    notes: list = field(default_factory=list)
    cut: list = field(default_factory=list)   # variants not tried (deadline)
    deadline_stops: int = 0            # solver runs stopped by the deadline
    fit_error: float = float("nan")    # CV: the rebuilt model's error on the training data

    @property
    def n_vectors(self):
        return int(self.model.expansion.merge_duplicates().n_terms)


def _like(exact, expansion, scheme=None):
    """An ExpansionClassifier with ``exact``'s classes and rules around ``expansion``."""
    from ..multiclass import ExpansionClassifier

    if scheme is None or scheme == exact.scheme:
        return ExpansionClassifier(expansion, exact.classes, scheme=exact.scheme,
                                   decision_function_shape=exact.decision_function_shape,
                                   break_ties=exact.break_ties, vote=exact.vote)
    return ExpansionClassifier(expansion, exact.classes, scheme=scheme)


def _refit_thresholds(exact, expansion, X, y):
    """The papers' training-error optimal thresholds, by the scheme's rule (one-vs-one:
    each pair on its two classes), as :class:`ReducedSetClassifier` does."""
    shell = ReducedSetClassifier(refit_intercept=True)
    shell.classes_ = np.asarray(exact.classes)
    shell.scheme_ = exact.scheme
    return shell._refit_thresholds(expansion, X, y)


class Candidate:
    """One way to build a small model: the interface every candidate implements.

    Subclasses set ``name`` and ``label`` and implement :meth:`variants`,
    :meth:`build` and :meth:`cost`; :meth:`fit` (the variant search on every split,
    the rebuild on all the training data under cross-validation) is shared.
    """

    name = ""
    label = ""
    needs_train = False

    def refusal(self, problem, n_vectors):
        """Why this candidate cannot run at budget ``n_vectors`` (None: it can)."""
        if self.needs_train and not problem.has_train:
            return "needs the training data (X_train, y_train)"
        return None

    def cost(self, problem, n_vectors, fidelity=FULL):
        """Estimated kernel evaluations of :meth:`fit` at ``fidelity`` (a count from the
        problem's size, for the progress display and the screening plan)."""
        raise NotImplementedError

    def screen_fidelity(self, problem, n_vectors):
        """The fidelity this candidate is screened at: :data:`SCREEN`, or :data:`FULL`
        when screening would save less than half the work."""
        screen = self.cost(problem, n_vectors, SCREEN)
        return SCREEN if screen < 0.5 * self.cost(problem, n_vectors, FULL) else FULL

    def variants(self, problem, fidelity):
        raise NotImplementedError

    def build(self, problem, split, n_vectors, variant, fidelity, out, all_rows=False):
        """The model at budget ``n_vectors`` with ``variant`` fitted on ``split.X_fit``; notes and
        deadline stops go to ``out`` (a :class:`CandidateFit`-like record)."""
        raise NotImplementedError

    def refit_all_rows(self, problem, split, fidelity):
        """Whether the variant was chosen on a subsample and the model returned is the
        chosen variant fitted once more on all rows."""
        return False

    def fit(self, problem, n_vectors, fidelity=FULL):
        """Fit every variant on every split, keep the lowest mean validation error (ties:
        the first listed), and return the model on all the data (cross-validation: rebuilt
        on the whole training set).

        Returns
        -------
        CandidateFit
        """
        out = CandidateFit(None, None, float("nan"), fidelity.name)
        errs, fitted = {}, {}
        for v in self.variants(problem, fidelity):
            if errs and problem.expired():
                out.cut.append(v.label)
                continue
            per = []
            for i, s in enumerate(problem.splits):
                model = self.build(problem, s, n_vectors, v, fidelity, out)
                fitted[(i, v)] = model
                per.append(problem.error(model, s.X_eval, s.y_eval))
            errs[v] = float(np.mean(per))
        v = min(errs, key=lambda k: errs[k])
        out.variant, out.error = v, errs[v]
        if problem.final is None:
            out.model = fitted[(0, v)]
            if self.refit_all_rows(problem, problem.splits[0], fidelity):
                s = problem.splits[0]
                out.model = self.build(problem, s, n_vectors, v, fidelity, out, all_rows=True)
                out.error = problem.error(out.model, s.X_eval, s.y_eval)
        else:
            f = problem.final
            out.model = self.build(problem, f, n_vectors, v, fidelity, out, all_rows=True)
            out.fit_error = problem.error(out.model, f.X_fit, f.y_fit)
        return out


class _Bounded:
    """An iterative candidate whose work the default search bounds (``WORK_RATIO``,
    ``WORK_FLOOR``): its full fit's estimate ``work(problem, b, FULL)`` at most
    ``problem.work_limit(b)``, its iterations cut in proportion (every fidelity alike)."""

    def work(self, problem, n_vectors, fidelity=FULL):
        """The estimated kernel evaluations at ``fidelity`` with all its iterations."""
        raise NotImplementedError

    def work_fraction(self, problem, n_vectors):
        """The fraction of its iterations the bound leaves (1 when unbounded or within it)."""
        limit = problem.work_limit(n_vectors)
        w = self.work(problem, n_vectors, FULL)
        return 1.0 if limit is None or w <= limit else limit / w

    def iterations(self, problem, n_vectors, fidelity, max_iter):
        """Iterations of a fit at ``fidelity``: ``max_iter`` x the fidelity's fraction x
        the bound's, at least one."""
        return max(1, math.ceil(max_iter * fidelity.iter_fraction
                                * self.work_fraction(problem, n_vectors)))

    def cost(self, problem, n_vectors, fidelity=FULL):
        return self.work(problem, n_vectors, fidelity) * self.work_fraction(problem, n_vectors)

    def bound_refusal(self, problem, n_vectors):
        """Why the bound leaves this candidate too little to run (None: it runs)."""
        f = self.work_fraction(problem, n_vectors)
        if f >= SCREEN_ITER_FRACTION:
            return None
        return (f"work bound: its full fit's estimate ({self.work(problem, n_vectors):.3g} "
                f"kernel evaluations) is {1 / f:.1f}x max({WORK_RATIO:g} x the peer's "
                f"{problem.peer_work(n_vectors):.3g}, {WORK_FLOOR:.3g}); bounded, it would "
                f"keep {100 * f:.0f} % of its iterations, less than its screening's "
                f"{100 * SCREEN_ITER_FRACTION:.0f} % (name it in 'method' to run it unbounded)")


# -- reduced sets of the original machine ----------------------------------------------
class _ReducedSet(Candidate):
    """A reduced set of the original expansion (thresholds kept or re-fitted)."""

    from_construction = False  # built on :func:`construction`

    def refusal(self, problem, n_vectors):
        if any(s.exact is None for s in problem.splits):
            return ("no validation data and the original machine cannot be re-trained on "
                    "the folds (pass X_val, y_val)")
        if problem.multi and not problem.shared and n_vectors < problem.psi.n_outputs:
            return (f"separate sets (shared=False) need at least one vector for each of the "
                    f"{problem.psi.n_outputs} binary machines, more than the budget "
                    f"{n_vectors}; use shared=True")
        return None

    def variants(self, problem, fidelity):
        return [Variant("b kept")] + ([Variant("b refit on train", refit_thresholds=True)]
                                      if problem.has_train else [])

    def reduced(self, problem, split, n_vectors, fidelity):
        raise NotImplementedError

    def build(self, problem, split, n_vectors, variant, fidelity, out, all_rows=False):
        key = ("rs", self.name, n_vectors, fidelity)
        if key not in split.cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                split.cache[key] = self.reduced(problem, split, n_vectors, fidelity)
        red = split.cache[key]
        # the note from what was built (a singular Gram matrix falls back to construction)
        if self.from_construction and split.cache.get(
                ("selection", problem.per_output(n_vectors))) is not None:
            note = (f"reduced set selected by backward elimination (eq. 63, Proposition 8): "
                    f"{n_vectors} >= {SELECT_FRACTION:g} x the original's vectors")
            if note not in out.notes:
                out.notes.append(note)
        if variant.refit_thresholds:
            red = _refit_thresholds(split.exact, red, split.X_fit, split.y_fit)
        return _like(split.exact, red)

    def cost(self, problem, n_vectors, fidelity=FULL):
        m = problem.per_output(n_vectors)
        n = problem.n_full
        return float(problem.n_init * problem.max_iter * m * (n + m))


def selects(problem, split, n_vectors):
    """Whether the default search's reduced set at ``n_vectors`` on ``split`` is selected
    (backward elimination) rather than constructed: ``method="auto"``, one set (shared or
    a single output), and ``SELECT_FRACTION * N <= n_vectors < N <= SELECT_MAX_TERMS`` for
    the ``N`` distinct vectors of the split's original machine."""
    if not problem.bounded or (problem.multi and not problem.shared):
        return False
    N = _distinct_terms(split).n_terms
    return SELECT_FRACTION * N <= n_vectors < N <= SELECT_MAX_TERMS


def _distinct_terms(split):
    """The split's original expansion with duplicate vectors merged (cached on the split)."""
    if "distinct" not in split.cache:
        split.cache["distinct"] = split.exact.expansion.merge_duplicates()
    return split.cache["distinct"]


def construction(problem, split, n_vectors):
    """The shared (or per-output) reduced-set construction of ``n_vectors`` vectors on ``split``:
    the prefix of one construction (cached on the split). In the default search, at a budget
    of at least ``SELECT_FRACTION`` of the original's vectors, the backward selection of
    :func:`~sparsekm.reduced_set.select_backward` instead (see :func:`selects`)."""
    m = problem.per_output(n_vectors)
    if selects(problem, split, m):
        key = ("selection", m)
        if key not in split.cache:
            from ..reduced_set import select_backward
            try:
                split.cache[key] = select_backward(_distinct_terms(split), m).expansion
            except ValueError:  # a singular Gram matrix: construct instead
                split.cache[key] = None
        if split.cache[key] is not None:
            return split.cache[key]
    key = ("prefix", problem.shared)
    n_run, prefix = split.cache.get(key, (0, None))
    if m > n_run:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prefix = construct_prefixes(split.exact.expansion, m, shared=problem.shared,
                                        n_init=problem.n_init, max_iter=problem.max_iter,
                                        random_state=problem.seed)
        split.cache[key] = (m, prefix)
    return prefix(m)


class Construct(_ReducedSet):
    name = "construct"
    label = "shared RS construction (phase 1)"
    from_construction = True

    def screen_fidelity(self, problem, n_vectors):
        return FULL  # one construction serves every fidelity (and seeds refine, SLMC)

    def reduced(self, problem, split, n_vectors, fidelity):
        return construction(problem, split, n_vectors)


class ConstructRefine(_Bounded, _ReducedSet):
    name = "construct+refine"
    label = "RS construction + joint refine (phase 2)"
    from_construction = True

    def refusal(self, problem, n_vectors):
        return super().refusal(problem, n_vectors) or self.bound_refusal(problem, n_vectors)

    def reduced(self, problem, split, n_vectors, fidelity):
        from ..reduced_set import refine

        iters = self.iterations(problem, n_vectors, fidelity, REFINE_MAX_ITER)
        res = refine(problem.psi if split.exact is None else split.exact.expansion,
                     construction(problem, split, n_vectors), max_iter=iters)
        if fidelity is not FULL and 0 < res.n_iter < iters:
            # stopped on its tolerance before its limit: the full fit's L-BFGS (the same
            # start, the same steps, a higher limit) would stop at the same iterate, so
            # this is the full fit, kept for it (issue 39: no work done twice)
            split.cache[("rs", self.name, n_vectors, FULL)] = res.expansion
        return res.expansion

    def work(self, problem, n_vectors, fidelity=FULL):
        # the construction it starts from is shared (cached), not counted here
        m = problem.per_output(n_vectors)
        return float(REFINE_MAX_ITER * fidelity.iter_fraction * m * (problem.n_full + m))


class Select(_ReducedSet):
    """Reduced-set selection (kernel PCA, backward, L1): :func:`reduce_expansion`."""

    def __init__(self, name, label):
        self.name, self.label = name, label

    def screen_fidelity(self, problem, n_vectors):
        return FULL

    def refusal(self, problem, n_vectors):
        why = super().refusal(problem, n_vectors)
        if why is None and self.name == "select-l1":
            per = n_vectors if (problem.shared or not problem.multi) else \
                n_vectors // problem.psi.n_outputs
            if not (problem.shared and problem.multi) and per < MIN_L1_PER_MACHINE:
                return (f"{per} vectors per binary machine is below {MIN_L1_PER_MACHINE}: "
                        "the L1 path keeps no usable machine there; use construct or "
                        "construct+refine")
        return why

    def reduced(self, problem, split, n_vectors, fidelity):
        from ..reduced_set import reduce_expansion

        return reduce_expansion(split.exact.expansion, problem.per_output(n_vectors),
                                method=self.name, shared=problem.shared,
                                random_state=problem.seed).expansion

    def cost(self, problem, n_vectors, fidelity=FULL):
        return float(problem.n_full ** 2 * max(n_vectors, 1))


# -- machines trained directly with few vectors ----------------------------------------
class _Direct(Candidate):
    needs_train = True

    def variants(self, problem, fidelity):
        """``C=...`` for the candidate's C values (full fidelity), or the first
        ``fidelity.n_C`` of them nearest the original's C (screening)."""
        values = self.C_values(problem)
        if fidelity.n_C is not None:
            values = [C for C in problem.C_order() if C in values][:fidelity.n_C]
        return [Variant(f"C={C:g}", C=float(C)) for C in values]

    def C_values(self, problem):
        return list(C_GRID)

    def scheme(self, problem):
        return "binary" if problem.classes.size == 2 else "ovr"


def _distinct_rows(X):
    return np.unique(np.asarray(X, dtype=np.float64), axis=0)


def landmarks(problem, split, n_vectors, kind, rows):
    """The peers' landmarks on ``split``'s rows ``rows`` and their Nystrom map
    ``(Z, M, transform)`` (cached): ``"kmeans"`` (scikit-learn's KMeans centres),
    ``"uniform"`` (a uniform subset of the distinct rows) or ``"greedy"`` (the greedy
    basis of Franc & Hlavac)."""
    from ..approx.nystroem import nystroem_features

    key = ("landmarks", kind, n_vectors, None if rows is None else rows.size)
    if key in split.cache:
        return split.cache[key]
    X, _ = _take(split, rows)
    if kind == "greedy":
        from scipy.linalg import solve_triangular

        from ..approx import GreedyBasis
        gb = GreedyBasis(n_basis=n_vectors, tol=1e-6, kernel=problem.kernel,
                         random_state=problem.seed).fit(X)
        Z = np.asarray(gb.basis_vectors_, dtype=np.float64)
        M = solve_triangular(gb.cholesky_, np.eye(Z.shape[0]), lower=True).T
        out = (Z, M, gb.transform)
    else:
        U = _distinct_rows(X)
        k = min(n_vectors, U.shape[0])
        if kind == "kmeans":
            from sklearn.cluster import KMeans
            Z = KMeans(n_clusters=k, n_init=1, random_state=problem.seed).fit(X).cluster_centers_
        else:
            rng = check_random_state(problem.seed)
            Z = U[np.sort(rng.choice(U.shape[0], size=k, replace=False))]
        out = nystroem_features(problem.kernel, Z, problem.seed)
    split.cache[key] = out
    return out


def fixed_z_linear_svm(kernel, Z, M, transform, X, y, C, seed):
    """Linear SVM on the features ``transform(X) = K(x, Z) M``, written back as an
    expansion on ``Z``: ``beta = M w`` (one column per one-vs-rest machine; one output
    when binary)."""
    from sklearn.svm import LinearSVC

    F = transform(X)
    svm = LinearSVC(C=C, max_iter=5000, random_state=seed).fit(F, y)
    W = svm.coef_
    if W.shape[0] == 1:
        return KernelExpansion(Z, M @ W[0], kernel, float(svm.intercept_[0]))
    return KernelExpansion(Z, M @ W.T, kernel, np.asarray(svm.intercept_, dtype=np.float64))


class _FixedZLinear(_Direct):
    """A linear SVM on the Nystrom features of fixed landmarks (the peers)."""

    kind = ""

    def c_search_rows(self, problem, split):
        """Rows of ``split.X_fit`` the C values are fitted on at full fidelity: all
        (None) unless a stratified subsample of ``C_SEARCH_ROWS`` rows plus the final fit
        on all rows costs fewer row-fits than every C on all rows."""
        n = split.X_fit.shape[0]
        k = len(C_GRID)
        if (k - 1) * n <= k * C_SEARCH_ROWS:
            return None
        return _subsample(split, C_SEARCH_ROWS, problem.seed, "c_rows")

    def refit_all_rows(self, problem, split, fidelity):
        return fidelity.rows is None and self.c_search_rows(problem, split) is not None

    def build(self, problem, split, n_vectors, variant, fidelity, out, all_rows=False):
        rows = problem.rows(split, fidelity, n_vectors)
        Z, M, transform = landmarks(problem, split, n_vectors, self.kind, rows)
        if fidelity.rows is None:
            fit_rows = None if all_rows else self.c_search_rows(problem, split)
            if fit_rows is not None:
                note = (f"C chosen on {C_SEARCH_ROWS:,} of {split.X_fit.shape[0]:,} rows, "
                        "then fitted on all")
                if note not in out.notes:
                    out.notes.append(note)
        else:
            fit_rows = rows
        X, y = _take(split, fit_rows)
        return _like(problem.exact, fixed_z_linear_svm(problem.kernel, Z, M, transform, X, y,
                                                       variant.C, problem.seed),
                     self.scheme(problem))

    def cost(self, problem, n_vectors, fidelity=FULL):
        n = problem.n_train if fidelity.rows is None else \
            min(problem.n_train, max(fidelity.rows, 4 * n_vectors))
        n_C = len(C_GRID) if fidelity.n_C is None else fidelity.n_C
        landmark = {"kmeans": KMEANS_PASSES, "uniform": 0.0, "greedy": 2.0}[self.kind]
        return float(n * n_vectors * (1.0 + landmark + n_C))


class KMeansSVM(_FixedZLinear):
    name = "kmeans-svm"
    label = "fixed-Z SVM on k-means centres (Nystrom k-means + LinearSVC)"
    kind = "kmeans"


class UniformSVM(_FixedZLinear):
    name = "uniform-svm"
    label = "fixed-Z SVM on a uniform subset (Nystrom uniform + LinearSVC)"
    kind = "uniform"


class GreedySVM(_FixedZLinear):
    name = "greedy-svm"
    label = "greedy basis (shared) + linear SVM"
    kind = "greedy"


class _SLMCCandidate(_Bounded, _Direct):
    """Wu et al.'s SLMC (one set shared by all one-vs-rest problems) from a start ``Z0``."""

    def refusal(self, problem, n_vectors):
        return super().refusal(problem, n_vectors) or self.bound_refusal(problem, n_vectors)

    def C_values(self, problem):
        return problem.C_order()[:SLMC_N_C]

    def start(self, problem, split, n_vectors, rows):
        raise NotImplementedError

    def build(self, problem, split, n_vectors, variant, fidelity, out, all_rows=False):
        from ..models import SLMC

        rows = problem.rows(split, fidelity, n_vectors)
        X, y = _take(split, rows)
        Z0 = np.asarray(self.start(problem, split, n_vectors, rows), dtype=np.float64)
        iters = self.iterations(problem, n_vectors, fidelity, SLMC_MAX_ITER)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = SLMC(n_vectors=Z0.shape[0], C=variant.C, kernel=problem.kernel, init=Z0,
                       max_iter=iters, shared=problem.classes.size > 2,
                       random_state=problem.seed).fit(X, y, deadline=problem.deadline)
        out.deadline_stops += sum(m == DEADLINE_STOP for m in clf.stop_reasons_)
        return _like(problem.exact, clf.expansion_, self.scheme(problem))

    def work(self, problem, n_vectors, fidelity=FULL):
        # its start (the construction, the k-means landmarks) is shared: not counted
        n = problem.n_train if fidelity.rows is None else \
            min(problem.n_train, max(fidelity.rows, 4 * n_vectors))
        n_C = SLMC_N_C if fidelity.n_C is None else min(fidelity.n_C, SLMC_N_C)
        return float(n_C * SLMC_MAX_ITER * fidelity.iter_fraction * 3.0 * n * n_vectors)


class SLMCFromRS(_SLMCCandidate):
    name = "slmc"
    label = "shared SLMC started from the RS"

    def refusal(self, problem, n_vectors):
        return super().refusal(problem, n_vectors) or (
            "needs the original machine on the training data" if
            any(s.exact is None for s in problem.splits) else None)

    def start(self, problem, split, n_vectors, rows):
        return construction(problem, split, n_vectors).vectors


class SLMCFromPeer(_SLMCCandidate):
    name = "slmc-peer"
    label = "shared SLMC started from the peer's k-means landmarks"

    def start(self, problem, split, n_vectors, rows):
        return landmarks(problem, split, n_vectors, "kmeans", rows)[0]


#: Every candidate by name.
CANDIDATES = {c.name: c for c in (
    Construct(), ConstructRefine(), KMeansSVM(), UniformSVM(), GreedySVM(), SLMCFromRS(),
    SLMCFromPeer(),
    Select("select-kpca", "RS selection (kernel PCA)"),
    Select("select-backward", "RS selection (backward)"),
    Select("select-l1", "RS selection (L1)"))}
