"""Reproductions of Wu, Schölkopf & Bakır (2006), *A direct method for building sparse
kernel learning algorithms*: Tables 1-3 and the USPS 3-vs-8 example of section 5.7.

Every (data set, split, ratio, method) result is cached in a keyed cell cache
(:mod:`sparsekm.reproduce._cache`; the CLI uses
``benchmarks/results/slmc_reproduction_cache.json``) so that Tables 1-3 share runs and an
interrupted reproduction resumes where it stopped; the key covers the code, every
parameter and the seed, so no stale cell is ever used. Each entry names the code that
computed it: ``commit`` (the computing checkout) or, for entries written before the cache
recorded it, ``code_commits`` (the first and last commit whose code gives the entry's code
key, recovered by ``tools/backfill_cache_provenance.py``; see :mod:`._cache`).
Kernel: ``k(x, y) = exp(-gamma ||x - y||^2)`` (eq. 48); USPS ``gamma = 1/128, C = 10``;
IDA ``gamma = 1/sigma`` with Rätsch's ``(C, sigma)``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from sklearn.svm import SVC

from .. import sparse_learning
from ..datasets import IDA_SVM_PARAMS, load_ida, load_usps
from ..expansion import KernelExpansion
from ..kernels import RBF
from ..models.slmc import RSVM, SLMC, ModifiedRS, ModifiedRSVM, SparseKFD
from . import Result, Section, Target, register
from ._cache import CellCache, code_key, data_fingerprint
from ._report import classify, much_worse


def _benchmark_targets():
    """Targets measured by ``benchmarks/bench_slmc.py`` (source checkout only)."""
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "results" / "slmc.json"
    if not path.exists():
        return [Target("Banana <= 1.5 s per split; USPS ten SLMCs < 20 min",
                       "run `python benchmarks/bench_slmc.py`", "-", None)]
    b = json.loads(path.read_text())
    out = []
    load = b.get("machine", {}).get("load_average_1_5_15_min")
    where = f", load average {load[0]:.1f}" if load else ""
    if "banana" in b:
        m = b["banana"]["mean"]
        out.append(Target(
            "Banana splits 1-10 at 10 %: error <= 11.29 %, <= 1.5 s per split "
            "(`bench_slmc.py`)",
            f"{100 * m['slmc_error']:.2f} % in {m['slmc_seconds']:.2f} s wall / "
            f"{m['slmc_cpu_seconds']:.2f} s CPU per split (single process{where})", "11.0 %",
            m["slmc_error"] <= 0.1129 and m["slmc_seconds"] <= 1.5))
    if "usps" in b and b["usps"].get("complete"):
        u = b["usps"]
        out.append(Target(
            "USPS, ten one-vs-rest SLMCs at 10 % of N_SV in < 20 min (`bench_slmc.py`)",
            f"{100 * u['slmc_error']:.2f} % in {u['slmc_wall_seconds']:.0f} s wall",
            "4.7 % in 6.9 h", u["slmc_wall_seconds"] < 1200))
    return out


SECTION = Section(
    title="Direct sparse learning (Wu, Schölkopf & Bakır 2006; issue 6)",
    order=6,
    intro="""\
*A direct method for building sparse kernel learning algorithms* (Wu, Schölkopf & Bakır,
JMLR 2006): SLMC, sparse KFD, and the RS / MRS / RSVM / MRSVM baselines. Commands:
`sparsekm reproduce wu-table1 wu-table2 wu-table3 usps-3-vs-8` and
`python benchmarks/bench_slmc.py`. Kernel `exp(-gamma ||x - y||^2)` (eq. 48): USPS
gamma = 1/128, C = 10; IDA gamma = 1/sigma with Rätsch's (C, sigma). Errors are test errors
in %, means over IDA splits 1-10; "n/a" marks a cell that was not run.

The three tables share their cells through a keyed cache,
`benchmarks/results/slmc_reproduction_cache.json` (`--cache FILE` to use another). Each entry
is keyed by a hash of the code that computes the cell (the syntax trees of `run_cell` and the
solver modules it uses, docstrings and comments left out, plus the numpy / scipy /
scikit-learn versions), every parameter (data set, split, ratio, method, C, gamma, mu, a
fingerprint of the data arrays), the seed and the BLAS in use (library, version and the
kernel OpenBLAS picked for the CPU, from threadpoolctl): a cell computed by other code, with
other parameters, another seed or under another BLAS kernel is never used, and a miss
recomputes. `--no-cache` recomputes every cell (the same tables under the same BLAS kernel);
`--cached-only` computes nothing and prints "n/a" for a cell without an entry. Each table's
command line says how many cells came from the cache, when, with which code key and under
which BLAS kernel they were computed, and by the code of which commits (since session 11;
the tables below were rendered before). Each entry also names the code that computed it:
`commit` (the computing checkout) or, for entries written before that was recorded,
`code_commits` (the first and last commit whose code gives the entry's code key, recovered
by `tools/backfill_cache_provenance.py`). The time to compute every cell from scratch is in the
generated [run times](#run-times); `--datasets banana,titanic` runs the tables for some
columns only, so a long regeneration can be done in pieces.

Seeds and BLAS kernels (issue 23): every seeded cell (RS, MRS, RSVM, MRSVM, SLMC, SKFD) is
the mean over `--seeds 3` seeds (the seed is part of each entry's key) x the splits, shown
with the range of the per-seed means and a verdict against the paper (+ better, = within
the range, − worse); the run time is for one seed, and each further seed adds the seeded
cells again. Tables 2-3 also show, where cells computed under other BLAS kernels exist, the
spread across kernels beside the spread across seeds: each kernel has its own cache,
`benchmarks/results/slmc_kernels/KERNEL.json`, filled by e.g. `OPENBLAS_CORETYPE=Prescott
sparsekm reproduce wu-table2 wu-table3 --datasets banana --cache
benchmarks/results/slmc_kernels/Prescott.json --write-results -`.""",
    outro="""\
Notes on the comparison:
- USPS: our one-vs-rest SVMs keep 505 SVs per classifier on average (2640 distinct over
  the ten; the paper's N_SV = 2683 is the union). N_z = 5 % / 10 % of each classifier's
  N_SV (26 / 50 XVs per classifier on average).
- RS: `sparsekm.reduced_set.construct` (iterated one-term approximations, no phase-2
  refinement), coefficients by eq. 47, the SVM's original bias. The paper picked the best
  of three RS implementations by the RS objective; our RS is worse on Banana/Image at 10 %.
- RSVM/MRSVM use the SVM's (C, gamma); the paper selected RSVM parameters by 5-fold CV.
- USPS 3 vs 8: the test set has 332 digits, so one error is 0.3 points.""",
    targets=_benchmark_targets,
    table_notes=lambda records: _wu_table_notes(records),
)


def _wu_table_notes(records):
    """Scoreboard evidence for the §5.7 example, from its record's cells (Tables 1-3 cells
    carry their own notes)."""
    tab = "Wu et al. 2006, §5.7 USPS 3 vs 8"
    rec = records.get("usps-3-vs-8")
    cells = {c["cell"]: c for c in (rec.data.get("cells", []) if rec else [])}
    sv = cells.get("SVM #SV")
    if not sv or sv.get("ours") is None:
        return {}
    return {tab: f"Our 3-vs-8 SVM (the paper's C = 10, gamma = 1/128) keeps {sv['ours']} SVs "
                 f"against the paper's {sv['paper']} ({float(sv['ours']) / sv['paper']:.1f}x), "
                 f"so 12 XVs are a {float(sv['ours']) / 12:.0f}x reduction here against the "
                 f"paper's {sv['paper'] / 12:.0f}x; the test set has 332 digits (one error = "
                 "0.3 points)."}

IDA_SETS = ("banana", "breast_cancer", "titanic", "waveform", "german", "image")
COLUMNS = ("usps",) + IDA_SETS
LABELS = {"usps": "USPS", "banana": "Banana", "breast_cancer": "Breast Cancer",
          "titanic": "Titanic", "waveform": "Waveform", "german": "German", "image": "Image"}

# Paper Table 1 (test error %); index: (ratio, method) -> per column (USPS first).
PAPER_T1 = {
    ("svm", None): (4.3, 11.8, 28.6, 22.1, 9.9, 22.5, 2.8),
    ("rs", 0.05): (4.9, 39.4, 28.8, 37.4, 9.9, 22.9, 37.6),
    ("mrs", 0.05): (4.9, 27.6, 28.8, 23.9, 10.0, 22.5, 19.4),
    ("rsvm", 0.05): (11.6, 29.9, 29.5, 24.5, 15.1, 23.6, 23.6),
    ("mrsvm", 0.05): (11.5, 28.1, 29.4, 24.8, 14.7, 23.9, 20.7),
    ("slmc", 0.05): (4.9, 16.5, 27.9, 26.4, 9.9, 22.3, 5.2),
    ("rs", 0.10): (4.7, 21.9, 27.9, 26.6, 10.0, 22.9, 18.3),
    ("mrs", 0.10): (4.8, 17.5, 29.0, 22.6, 9.9, 22.6, 6.9),
    ("rsvm", 0.10): (8.2, 17.5, 31.0, 22.9, 11.6, 24.5, 14.2),
    ("mrsvm", 0.10): (8.0, 16.9, 30.3, 23.9, 11.8, 23.7, 12.7),
    ("slmc", 0.10): (4.7, 11.0, 27.9, 22.4, 9.9, 22.9, 3.6),
}
PAPER_NSV = (2683, 86.7, 112.8, 70.6, 158.9, 408.2, 172.1)
# The paper's RVM rows (Tipping 2001's numbers, 5-fold CV): N_z / N_SV in % and error %.
PAPER_RVM_RATIO = (11.8, 13.2, 5.6, 92.5, 9.2, 3.1, 20.1)
PAPER_RVM = (5.1, 10.8, 29.9, 23.0, 10.9, 22.2, 3.9)


# RVM (Table 1): "The results for the RVM are taken directly from (Tipping, 2001), where
# 5-fold cross validation was performed for parameter selection" (Wu et al., section 5.3).
# We do the same inside each training set: the RBF width gamma = gamma_SVM * factor is chosen
# by stratified 5-fold CV over RVM_GAMMA_FACTORS (smallest mean validation error; ties go to
# the smaller gamma), then the RVM is refitted on the whole training set.
RVM_GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
RVM_FOLDS = 5
RVM_OPTIONS = {"max_iter": 1000, "tol": 1e-3, "threshold_alpha": 1e9, "prune_rule": "marginal"}


def _rvm_estimator(C, kernel, random_state):
    """The RVM of Table 1's RVM rows: an unfitted estimator whose ``fit`` chooses gamma.

    A :class:`~sklearn.model_selection.GridSearchCV` over
    :class:`~sparsekm.models.rvm.RVC` with ``kernel = RBF(kernel.gamma * f)``, ``f`` in
    :data:`RVM_GAMMA_FACTORS`, scored by accuracy in stratified :data:`RVM_FOLDS`-fold
    cross-validation on the training data passed to ``fit`` (the paper's protocol for
    its RVM rows, Tipping 2001), refitted on all of it. ``C`` is not used (the RVM has
    no C). Nothing of the test set is seen.
    """
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    from ..models.rvm import RVC

    grid = [RBF(kernel.gamma * f) for f in sorted(RVM_GAMMA_FACTORS)]
    cv = StratifiedKFold(RVM_FOLDS, shuffle=True, random_state=random_state)
    return GridSearchCV(RVC(kernel=grid[0], **RVM_OPTIONS), {"kernel": grid}, cv=cv,
                        refit=True, error_score="raise")


# USPS RVM (Table 1, first column). RVC (Tipping 2001) starts from all 7291 basis functions,
# too slow at that size (measurements: CHANGELOG, issue 35). The cell uses FastRVC (Tipping & Faul 2003, the same model and marginal
# likelihood, maximised one alpha_i at a time) instead, with the SVM's kernel RBF(1/128):
# the ten one-vs-rest fits take a quarter of an hour or so (the cell cache records the time;
# the table's note quotes it), so the IDA protocol (gamma by 5-fold CV over 5 factors:
# 10 x (5 x 5 + 1) = 260 fits, hours) is out of reach here.
RVM_USPS_OPTIONS = {"max_iter": 10000, "tol": 1e-3}
#: fits of the IDA protocol (gamma by 5-fold CV over 5 factors, then the refit) for ten classes
RVM_CV_FITS = 10 * (5 * 5 + 1)


def rvm_usps_protocol(seconds=None):
    """The USPS RVM cell's protocol note; ``seconds``: the ten fits' compute time as the
    cell cache records it (None: not known), from which the CV protocol's time follows
    (issue 38: the note said "938 s" where the cache recorded 812 s)."""
    if seconds:
        took = (f"the ten fits took {seconds:.0f} s as the cell cache records (about "
                f"{seconds / 10:.0f} s each) and the CV protocol needs {RVM_CV_FITS} fits "
                f"(about {RVM_CV_FITS * seconds / 10 / 3600:.0f} h at that rate)")
    else:
        took = (f"the CV protocol needs {RVM_CV_FITS} fits of the ten fits' kind (hours; the "
                "cell's own time is not in the cache)")
    return ("USPS: sparsekm.models.FastRVC (Tipping & Faul 2003: the same model and "
            "marginal likelihood as RVC, maximised one alpha_i at a time; RVC itself "
            "did not finish one alpha re-estimation on the 7291 points in 200 s), ten "
            "one-vs-rest RVMs, largest decision value wins, with the SVM's kernel "
            f"RBF(1/128): not chosen by 5-fold CV as on the IDA sets, because {took}")


#: the cell of :func:`run_rvm_usps_cell`
RVM_USPS_CELL = "usps/1/None/rvm_fast"


def _cell_seconds(cache, cell):
    """The compute time recorded for ``cell`` among the entries ``cache`` served or
    computed in this run (None when it has none)."""
    for e in list(cache.hits) + list(cache.computed):
        if e.get("cell") == cell and e.get("seconds"):
            return float(e["seconds"])
    return None


def run_rvm_usps_cell(cache, data_path=None, seed=0, compute=True):
    """The USPS RVM cell of Table 1: ``{"error", "n_z", "ratio_percent"}`` (cached, keyed).

    Ten :class:`~sparsekm.models.FastRVC` one-vs-rest classifiers with the SVM's kernel
    (see :func:`rvm_usps_protocol`); ``N_z / N_SV`` over the SVM cell's mean SV count.
    The fit is deterministic, so ``seed`` only keys the cache.
    """
    from ..models import FastRVC

    name, split = "usps", 1
    cell = f"{name}/{split}/None/rvm_fast"
    params = cell_params(name, split, None, "rvm_fast", data_path)
    code = cell_code_key("rvm_fast")
    hit = cache.get(cell, params, seed, code)
    if hit is not None or not compute:
        return hit
    svm = run_cell(name, split, None, "svm", cache, data_path, seed)
    X, y, Xt, yt = _load(name, split, data_path)
    _, kernel = _params(name)
    t0 = time.perf_counter()
    classes = np.unique(y)
    F, n_rv = [], []
    for c in classes:
        m = FastRVC(kernel=kernel, **RVM_USPS_OPTIONS).fit(X, np.where(y == c, 1, -1))
        F.append(m.decision_function(Xt))
        n_rv.append(int(m.n_vectors_))
    pred = classes[np.argmax(np.column_stack(F), axis=1)]
    out = {"error": float(np.mean(pred != yt)), "n_z": float(np.mean(n_rv)),
           "n_z_per_class": n_rv, "ratio_percent": 100.0 * float(np.mean(n_rv)) / svm["n_sv"]}
    cache.put(cell, params, seed, code, out, seconds=time.perf_counter() - t0)
    return out


def _run(name, split, ratio, method, cache, ctx, compute=True, seed=None):
    """One cell through its runner: :func:`run_cell`, or :func:`run_rvm_usps_cell`."""
    seed = ctx.seed if seed is None else seed
    if name == "usps" and method == "rvm":
        return run_rvm_usps_cell(cache, ctx.data_path, seed, compute=compute)
    return run_cell(name, split, ratio, method, cache, ctx.data_path, seed, compute=compute)


#: Methods whose cells depend on the seed (the RS construction's random starts, random or
#: k-means initial XVs, the CV folds of SKFD's mu): each of their cells is the mean over
#: ``ctx.seeds`` seeds (``ctx.seed``, ``ctx.seed + 1``, ...) x the paper's splits, shown with
#: the range of the per-seed means. The SVM is deterministic; the RVM rows (Table 1) use
#: ``ctx.seed`` only (its CV folds; one seed of a large set's cells takes the better part of
#: an hour, see CHANGELOG, issue 35).
SEEDED = frozenset({"rs", "mrs", "rsvm", "mrsvm", "slmc", "slmc_kmeans", "skfd", "skfd_cv"})


def cell_seeds(ctx, method):
    """The seeds a ``method`` cell is averaged over (see :data:`SEEDED`)."""
    if method not in SEEDED:
        return [ctx.seed]
    return [ctx.seed + i for i in range(max(1, int(getattr(ctx, "seeds", 1) or 1)))]


PAPER_T2 = {
    ("slmc", 0.05): (4.9, 16.5, 27.9, 26.4, 9.9, 22.3, 5.2),
    ("slmc_kmeans", 0.05): (4.9, 16.2, 26.8, 24.4, 9.9, 22.7, 6.0),
    ("slmc", 0.10): (4.7, 11.0, 27.9, 22.4, 9.9, 22.9, 3.6),
    ("slmc_kmeans", 0.10): (4.6, 10.9, 27.3, 23.2, 9.9, 22.7, 3.8),
}
PAPER_T3_KFD = (10.8, 25.8, 23.2, 9.9, 23.7, 3.3)
PAPER_T3_KFD_NZ = (400, 200, 150, 400, 700, 1300)
PAPER_T3_SKFD = (10.8, 25.5, 23.5, 9.9, 23.5, 4.0)
NAMES = {"svm": "SVM", "rs": "RS", "mrs": "MRS", "rsvm": "RSVM", "mrsvm": "MRSVM",
         "slmc": "SLMC", "slmc_kmeans": "SLMC (k-means init)", "skfd": "SKFD"}

# SKFD regulariser mu (eq. 49); B^z is the unnormalised within-class scatter + mu K^z
SKFD_MU = 1e-3
SKFD_MU_GRID = (1e-3, 1e-1, 10.0)


def _rs_construct():
    try:
        from ..reduced_set import construct
    except ImportError:
        return None
    return construct


def _cache_for(ctx):
    """The keyed cell cache of ``ctx`` (``--cache``, default ``<out>/slmc_cache.json``)."""
    path = getattr(ctx, "cache_path", None) or Path(ctx.out_dir) / "slmc_cache.json"
    return CellCache(path, read=not getattr(ctx, "no_cache", False))


_FINGERPRINTS = {}


def _data_key(name, split, data_path):
    """Fingerprint of the cell's data arrays (memoised per process)."""
    k = (name, split, str(data_path))
    if k not in _FINGERPRINTS:
        _FINGERPRINTS[k] = data_fingerprint(*_load(name, split, data_path))
    return _FINGERPRINTS[k]


def cell_code_key(method):
    """:func:`~sparsekm.reproduce._cache.code_key` of everything that computes a ``method`` cell.

    Every cell first fits the full SVMs (:func:`_svm`, by
    :mod:`sparsekm.sparse_learning.full_svm`): that code and the engine (kernels,
    expansion, backend, config, parallel, validation) key every method. The SVM cells need
    nothing else; the RVM cells add the RVM estimators; every other method adds the direct
    solvers (:mod:`~sparsekm.sparse_learning` with its private L-BFGS driver, and the
    estimators of :mod:`sparsekm.models.slmc`), and RS / MRS the reduced-set construction.
    So a change of the SLMC solvers leaves the SVM and RVM cells' keys as they are.
    """
    from .. import backend, config, expansion, kernels, parallel
    from ..sparse_learning import full_svm
    from ..utils import validation

    engine = [kernels, expansion, backend, config, parallel, validation]
    base = [run_cell, _svm, _predict_ovr, _error, _params, sparse_learning, full_svm, *engine]
    if method == "svm":
        return code_key(*base)
    if method in ("rvm", "rvm_fast"):
        from ..models import _base as models_base
        from ..models import fast_rvm as models_fast_rvm
        from ..models import rvm as models_rvm

        if method == "rvm":
            return code_key(*base, _rvm_estimator, models_rvm, models_base)
        return code_key(run_rvm_usps_cell, _load, *base, models_fast_rvm, models_rvm,
                        models_base)
    from ..models import slmc as models_slmc
    from ..sparse_learning import _lbfgs, fixed_z, sparse_kfd, svm_marginal
    from ..utils import optimize

    objs = [*base, fixed_z, svm_marginal, sparse_kfd, _lbfgs, optimize, models_slmc]
    if method in ("rs", "mrs"):
        from .. import preimage
        from ..reduced_set import _base, _one_term, construction

        objs += [_base, _one_term, construction, preimage]
    if method == "skfd_cv":
        objs.append(_skfd_cv)
    return code_key(*objs)


def cell_params(name, split, ratio, method, data_path=None):
    """Every parameter of a cell (the seed and the code are keyed separately)."""
    C, kernel = _params(name)
    params = {"data": _data_key(name, split, data_path), "C": C, "gamma": kernel.gamma,
              "ratio": ratio, "method": method}
    if method == "skfd":
        params["mu"] = SKFD_MU
    if method == "skfd_cv":
        params["mu_grid"] = list(SKFD_MU_GRID)
    if method == "rvm_fast":
        params["rvm_options"] = dict(RVM_USPS_OPTIONS)
    if method == "rvm":
        params["rvm_gamma_factors"] = list(RVM_GAMMA_FACTORS)
        params["rvm_folds"] = RVM_FOLDS
        params["rvm_options"] = dict(RVM_OPTIONS)
    return params


def _load(name, split, data_path):
    if name == "usps":
        return load_usps(data_path)
    return load_ida(name, split, data_path)


def _params(name):
    if name == "usps":
        return 10.0, RBF(1.0 / 128)
    C, sigma = IDA_SVM_PARAMS[name]
    return C, RBF(1.0 / sigma)


def _error(clf, Xt, yt):
    return float(np.mean(clf.predict(Xt) != yt))


def _svm(X, y, C, kernel):
    """Full SVMs: one binary expansion, or one per class (one-vs-rest) for USPS."""
    classes = np.unique(y)
    problems = [classes[1]] if classes.size == 2 else list(classes)
    exps = []
    for c in problems:
        yb = np.where(y == c, 1.0, -1.0)
        exps.append(sparse_learning.full_svm_expansion(X, yb, kernel, C))
    return classes, exps


def _predict_ovr(classes, exps, Xt):
    F = np.column_stack([e.decision_function(Xt) for e in exps])
    if len(exps) == 1:
        return classes[(F[:, 0] > 0).astype(int)]
    return classes[np.argmax(F, axis=1)]


def run_cell(name, split, ratio, method, cache, data_path=None, seed=0, compute=True):
    """One cached result: ``{"error", "n_z"}`` (errors as fractions).

    The cache key covers the code (:func:`cell_code_key`), every parameter
    (:func:`cell_params`, including a fingerprint of the data) and ``seed``; a
    miss recomputes. ``compute=False`` only reads the cache (``None`` when the
    cell was never run with today's code).
    """
    cell = f"{name}/{split}/{ratio}/{method}"
    params = cell_params(name, split, ratio, method, data_path)
    code = cell_code_key(method)
    hit = cache.get(cell, params, seed, code)
    if hit is not None or not compute:
        return hit
    X, y, Xt, yt = _load(name, split, data_path)
    C, kernel = _params(name)
    t0 = time.perf_counter()
    classes, exps = _svm(X, y, C, kernel)
    n_sv = [e.n_terms for e in exps]
    if method == "svm":
        out = {"error": float(np.mean(_predict_ovr(classes, exps, Xt) != yt)),
               "n_sv": float(np.mean(n_sv)), "n_sv_union": int(np.unique(
                   np.vstack([e.vectors for e in exps]), axis=0).shape[0])}
        cache.put(cell, params, seed, code, out, seconds=time.perf_counter() - t0)
        return out
    rs = seed * 1000 + split
    if method == "rvm":  # Table 1's RVM rows: gamma by 5-fold CV inside the training set
        if name == "usps":
            return None  # USPS goes through run_rvm_usps_cell (FastRVC), see _run
        F, n_rv = [], []
        for c in (classes if len(exps) > 1 else [classes[1]]):
            m = _rvm_estimator(C, kernel, rs).fit(X, np.where(y == c, 1, -1))
            F.append(m.decision_function(Xt))
            n_rv.append(int(m.best_estimator_.n_vectors_))
        F = np.column_stack(F)
        pred = (classes[(F[:, 0] > 0).astype(int)] if F.shape[1] == 1
                else classes[np.argmax(F, axis=1)])
        # N_z / N_SV as the paper's Table 1: relevance vectors over the SVM's SVs
        out = {"error": float(np.mean(pred != yt)), "n_z": float(np.mean(n_rv)),
               "ratio_percent": 100.0 * float(np.mean(n_rv)) / float(np.mean(n_sv))}
        cache.put(cell, params, seed, code, out, seconds=time.perf_counter() - t0)
        return out
    # N_z = ratio * N_SV of each binary SVM (at least 1)
    n_z = [max(1, int(round(ratio * n))) for n in n_sv]
    t0 = time.perf_counter()
    if method in ("rs", "mrs"):
        construct = _rs_construct()
        if construct is None:
            return None
        rs_exps, Zs = [], []
        for e, nz in zip(exps, n_z, strict=True):
            res = construct(e, nz, random_state=rs)
            red = getattr(res, "expansion", res)
            red = KernelExpansion(red.vectors, red.coef, kernel, e.intercept)
            rs_exps.append(red)
            Zs.append(np.asarray(red.vectors))
        if method == "rs":
            pred = _predict_ovr(classes, rs_exps, Xt)
        else:
            clf = ModifiedRS(C=C, kernel=kernel, Z=Zs if len(Zs) > 1 else Zs[0]).fit(X, y)
            pred = clf.predict(Xt)
        err = float(np.mean(pred != yt))
    else:
        if method == "skfd":
            models = [SparseKFD(n_vectors=nz, C=C, mu=SKFD_MU, kernel=kernel, init="kmeans",
                                random_state=rs) for nz in n_z]
        elif method == "skfd_cv":
            models = [_skfd_cv(X, y, nz, C, kernel, rs) for nz in n_z]
        else:
            cls = {"rsvm": RSVM, "mrsvm": ModifiedRSVM, "slmc": SLMC, "slmc_kmeans": SLMC}[method]
            kw = {"init": "kmeans"} if method == "slmc_kmeans" else {}
            models = [cls(n_vectors=nz, C=C, kernel=kernel, random_state=rs, **kw) for nz in n_z]
        if len(models) == 1:
            err = _error(models[0].fit(X, y), Xt, yt)
        else:
            F = []
            for c, m in zip(classes, models, strict=True):
                m.fit(X, np.where(y == c, 1, -1))
                F.append(m.decision_function(Xt))
            err = float(np.mean(classes[np.argmax(np.column_stack(F), axis=1)] != yt))
    out = {"error": err, "n_z": float(np.mean(n_z))}
    cache.put(cell, params, seed, code, out, seconds=time.perf_counter() - t0)
    return out


def _skfd_cv(X, y, n_z, C, kernel, rs):
    """SparseKFD with mu chosen by 5-fold cross-validation on the training set."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold

    base = SparseKFD(n_vectors=n_z, C=C, kernel=kernel, init="kmeans", random_state=rs)
    cv = StratifiedKFold(5, shuffle=True, random_state=rs)
    search = GridSearchCV(base, {"mu": list(SKFD_MU_GRID)}, cv=cv, refit=False, error_score=0.0)
    search.fit(X, y)
    return base.set_params(mu=search.best_params_["mu"])


def _splits(name, quick):
    if name == "usps":
        return [1]
    return [1, 2] if quick else list(range(1, 11))


def _split_text(ctx):
    return "1-2 (--quick)" if ctx.quick else "1-10"


def _mean(name, ratio, method, cache, ctx, progress=None):
    """Every run of a cell: the values of each seed (:func:`cell_seeds`) x split, each with
    its ``"_seed"``. With ``--cached-only`` a seed missing a split is left out (the cell
    then says how many seeds it has, :func:`_fmt`); ``None`` when no seed is complete."""
    vals = []
    for seed in cell_seeds(ctx, method):
        got = []
        for split in _splits(name, ctx.quick):
            r = _run(name, split, ratio, method, cache, ctx,
                     compute=not getattr(ctx, "cached_only", False), seed=seed)
            if progress is not None:
                progress.update(1)
            if r is None:
                break
            got.append(dict(r, _seed=seed))
        else:
            vals += got
    return vals or None


def _n_runs(cols, ctx, methods):
    """Runs behind ``methods``' cells in ``cols`` (seeds x splits each)."""
    return sum(len(_splits(c, ctx.quick)) * len(cell_seeds(ctx, m)) for c in cols
               for m in methods)


def seed_means(vals, key="error", scale=100):
    """``{seed: mean over the splits}`` of a cell's runs (:func:`_mean`)."""
    by = {}
    for v in vals:
        by.setdefault(v.get("_seed", 0), []).append(v[key])
    return {s: scale * float(np.mean(x)) for s, x in sorted(by.items())}


def _spread(vals, key="error", scale=100):
    """``(lo, hi)`` of the per-seed means (``None``: not run, or a single seed)."""
    if vals is None:
        return None
    m = seed_means(vals, key, scale)
    return None if len(m) < 2 else (round(min(m.values()), 2), round(max(m.values()), 2))


def _peek_svm(name, cache, ctx):
    """The SVM cells of a column if cached (``None`` otherwise), for evidence notes: a look
    that neither computes nor counts in the table's provenance line."""
    with cache.uncounted():
        vals = [_run(name, split, None, "svm", cache, ctx, compute=False)
                for split in _splits(name, ctx.quick)]
    return None if any(v is None for v in vals) else vals


def _partial_reason(name, ratio, method, cache, ctx):
    """Why a column's cell is "n/a" under ``--cached-only``: how many splits are cached.

    ``None`` when every split is cached (the cell is shown) or when cells are computed.
    """
    if not getattr(ctx, "cached_only", False):
        return None
    splits = _splits(name, ctx.quick)
    with cache.uncounted() as found:  # a look, not a use: the provenance line is unchanged
        got = [_run(name, s, ratio, method, cache, ctx, compute=False) for s in splits]
    k = sum(g is not None for g in got)
    if k == len(splits):
        return None
    secs = [e.get("seconds") or 0.0 for e in found]
    per = f" ({np.mean(secs):.0f} s per split on this 2-core machine)" if secs else ""
    return (f"{k} of {len(splits)} splits in the cache for today's code{per}; the others were "
            f"not computed: run `sparsekm reproduce wu-table1 --datasets {name}`")


def _fmt(vals, key="error", scale=100, paper=None, want=None):
    """The cell as shown: the mean over seeds x splits, then the range of the per-seed
    means and, with ``paper``, the verdict against it (+ better, = within the spread or
    tied, - worse; :func:`~sparsekm.reproduce._report.classify`); ``want``: the seeds asked
    for, noted when fewer are cached (``--cached-only``)."""
    if vals is None:
        return "n/a"
    text = f"{scale * np.mean([v[key] for v in vals]):.1f}"
    spread = _spread(vals, key, scale)
    if spread is not None:
        text += f" ({spread[0]:.1f}–{spread[1]:.1f})"
    if want is not None and len(seed_means(vals, key, scale)) < want:
        text += f" [{len(seed_means(vals, key, scale))} of {want} seeds]"
    if paper is not None:
        text += " " + _MARK[classify({"ours": round(scale * float(np.mean(
            [v[key] for v in vals])), 1), "paper": paper, "spread": spread})]
    return text


_MARK = {"better": "+", "tie": "=", "worse": "−"}


def _shown(vals, paper, ctx, method):
    """A seeded cell of a table: "ours (spread) verdict / paper" (:func:`_fmt`)."""
    return f"{_fmt(vals, paper=paper, want=len(cell_seeds(ctx, method)))} / {paper}"


def _num(vals, key="error", scale=100):
    """The mean of a cell over splits, rounded as printed (``None`` when not run)."""
    return None if vals is None else round(scale * float(np.mean([v[key] for v in vals])), 1)


def _cell(table, name, ours, paper, reason=None, spread=None, evidence=None):
    """One published cell for the fidelity scoreboard (lower is better: errors, counts).

    ``spread``: the range of the per-seed means; ``evidence()``: the note of a cell much
    worse than the paper (called only then).
    """
    if ours is not None:
        ours = round(float(ours), 1)
    out = {"table": table, "cell": name, "ours": ours, "paper": paper,
           "reason": None if ours is not None else (reason or "no cache entry for today's code "
                                                    "(not computed yet; run without "
                                                    "--cached-only)")}
    if spread is not None:
        out["spread"] = list(spread)
    if evidence is not None and ours is not None and much_worse(out):
        out["note"] = evidence()
    return out


#: What differs from the paper for each method (protocol facts, cited in the evidence).
CAUSES = {
    "rs": "RS: one construction (iterated one-term approximations, "
          "sparsekm.reduced_set.construct; coefficients by eq. 47, the SVM's own bias), "
          "where the paper ran three RS implementations and kept, per data set, the one with "
          "the smallest objective (4) (section 5.2)",
    "mrs": "MRS re-fits beta by the SVM problem (45) on our RS vectors and inherits their "
           "quality; the paper's RS vectors are the best of three implementations by "
           "objective (4)",
    "rsvm": "RSVM with the SVM's (C, gamma); the paper chose RSVM parameters by 5-fold CV",
    "mrsvm": "MRSVM with the SVM's (C, gamma); the paper chose RSVM parameters by 5-fold CV",
    "slmc": "SLMC from random initial XVs (a nonconvex problem: the result depends on the "
            "start), L-BFGS <= 100 iterations",
    "slmc_kmeans": "SLMC from k-means initial XVs (scikit-learn KMeans, one init), L-BFGS "
                   "<= 100 iterations",
    "skfd": "SKFD with mu fixed (the paper does not give mu)",
    "skfd_cv": "SKFD with mu by 5-fold CV over 3 values (the paper does not give mu)",
    "rvm": "RVM: our RVC (Tipping 2001), gamma by 5-fold CV over 5 multiples of the SVM's "
           "gamma; the paper quotes Tipping's (2001) RVM numbers, whose kernel widths and "
           "pruning are his",
}


def _evidence(col, method, vals, svm, key="error", scale=100):
    """A much worse cell's note: the protocol difference and what we measured."""
    def ev():
        parts = [CAUSES.get(method, method)]
        if svm is not None:
            nsv = (f"{_nsv(svm)} per classifier, {svm[0].get('n_sv_union', 'n/a')} distinct "
                   f"(paper {_paper(PAPER_NSV, col)} distinct)" if col == "usps" else
                   f"{_nsv(svm)} (paper {_paper(PAPER_NSV, col)})")
            parts.append(f"our SVM on {LABELS[col]}: N_SV {nsv}, error {_fmt(svm)} % (paper "
                         f"{_paper(PAPER_T1[('svm', None)], col)})")
        if vals:
            if "n_z" in vals[0]:
                parts.append(f"N_z = {np.mean([v['n_z'] for v in vals]):.1f} per classifier")
            sm = seed_means(vals, key, scale)
            if len(sm) > 1:
                parts.append(f"per-seed means {min(sm.values()):.1f}–{max(sm.values()):.1f} "
                             f"over {len(sm)} seeds")
            per = [scale * v[key] for v in vals]
            if len(per) > len(sm):
                parts.append(f"per-split {min(per):.1f}–{max(per):.1f}")
            if method == "rvm" and key != "error":
                parts.append(f"our RVM error {_fmt(vals)} % (paper {_paper(PAPER_RVM, col)})")
        return "Measured: ".join([parts[0] + ". ", "; ".join(parts[1:]) + "."])
    return ev


def _seeds_note(ctx):
    seeds = cell_seeds(ctx, "slmc")
    which = (f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}")
    return (f"Seeded cells (RS, MRS, RSVM, MRSVM, SLMC, SKFD): the mean over {len(seeds)} "
            f"{'seeds' if len(seeds) > 1 else 'seed'} ({which}, `--seeds {len(seeds)}`) x the "
            "splits, then in brackets the range of the per-seed means (each over the splits), "
            "then the verdict against the paper: + every seed's mean better than the paper, "
            "= the paper's value within that range (at its printed precision), − every seed's "
            "mean worse. The SVM is deterministic and the RVM rows use the first seed only.")


#: Per-kernel cell caches (``<cache folder>/slmc_kernels/<KERNEL>.json``), written by runs
#: under another BLAS kernel, e.g. ``OPENBLAS_CORETYPE=Prescott sparsekm reproduce
#: wu-table2 wu-table3 --datasets banana --cache
#: benchmarks/results/slmc_kernels/Prescott.json --write-results -``.
KERNEL_CACHE_DIR = "slmc_kernels"


def blas_kernel():
    """``"openblas 0.3.30 SkylakeX + openblas 0.3.31 SkylakeX"``: every BLAS library loaded
    (numpy's and scipy's), with version and kernel (threadpoolctl), sorted; ``"unknown"``
    when none reports. ``OPENBLAS_CORETYPE=Prescott`` shows as OpenBLAS's "Katmai"."""
    from threadpoolctl import threadpool_info

    libs = sorted({" ".join(str(info.get(k)) for k in ("internal_api", "version",
                                                        "architecture") if info.get(k))
                   for info in threadpool_info() if info.get("user_api") == "blas"})
    return " + ".join(libs) or "unknown"


def kernel_caches(cache):
    """``{kernel label: CellCache}`` of the per-kernel caches beside ``cache``'s file."""
    if getattr(cache, "path", None) is None:
        return {}
    folder = Path(cache.path).parent / KERNEL_CACHE_DIR
    return {p.stem: CellCache(p) for p in sorted(folder.glob("*.json"))}


def _lookup(kcache, name, split, ratio, method, data_path, seed):
    """A cell of another kernel's cache: the exact key, else an entry of the same cell, seed,
    code and parameters whose parameters add keys of their own (a key that also records the
    BLAS kernel). ``None`` when absent."""
    cell = f"{name}/{split}/{ratio}/{method}"
    params = json.loads(json.dumps(cell_params(name, split, ratio, method, data_path)))
    code = cell_code_key(method)
    hit = kcache.get(cell, params, seed, code)
    if hit is not None:
        return hit
    for e in kcache.entries.values():
        ep = e.get("params") or {}
        if (e.get("cell") == cell and e.get("seed") == seed and e.get("code") == code
                and all(ep.get(k) == v for k, v in params.items())):
            return e["value"]
    return None


def kernel_means(name, ratio, method, cache, ctx):
    """``{kernel label: mean error % over seeds x splits}`` from the per-kernel caches
    (:func:`kernel_caches`), for the kernels that hold every run of the cell."""
    out = {}
    for label, kc in kernel_caches(cache).items():
        vals = [_lookup(kc, name, split, ratio, method, ctx.data_path, seed)
                for seed in cell_seeds(ctx, method) for split in _splits(name, ctx.quick)]
        if vals and all(v is not None for v in vals):
            out[label] = 100 * float(np.mean([v["error"] for v in vals]))
    return out


def _kernel_table(rows, cols, cache, ctx):
    """Seed spread beside the spread across BLAS kernels, for the columns with entries of
    other kernels (:func:`kernel_means`); empty when there are none."""
    lines, wider = [], []
    n_cells = 0
    for label, ratio, m in rows:
        for c in cols:
            other = kernel_means(c, ratio, m, cache, ctx)
            if not other:
                continue
            n0 = len(cache.hits)
            vals = _mean(c, ratio, m, cache, ctx)  # already counted by the table
            del cache.hits[n0:]
            if vals is None:
                continue
            sm = seed_means(vals)
            mine = 100 * float(np.mean([v["error"] for v in vals]))
            every = dict(other)
            every.setdefault("this run", mine)
            lo, hi = min(every.values()), max(every.values())
            seed_w = round(max(sm.values()) - min(sm.values()), 1)
            kernel_w = round(hi - lo, 1)
            n_cells += 1
            if kernel_w > seed_w:
                wider.append(f"{LABELS[c]} {label} ({kernel_w:.1f} against {seed_w:.1f}, "
                              f"{len(every)} kernels)")
            lines.append(f"| {LABELS[c]} {label} | {mine:.1f} | {min(sm.values()):.1f}–"
                         f"{max(sm.values()):.1f} ({max(sm.values()) - min(sm.values()):.1f}) | "
                         f"{lo:.1f}–{hi:.1f} ({hi - lo:.1f}) | "
                         + ", ".join(f"{k} {v:.1f}" for k, v in sorted(every.items())) + " |")
    if not lines:
        return ""
    n = len(cell_seeds(ctx, "slmc"))
    return ("\n\nSpread across seeds beside the spread across BLAS kernels (test error %; "
            f"each kernel's value is its mean over the same {n} seeds x splits; per-kernel "
            f"caches in `{KERNEL_CACHE_DIR}/` beside the cell cache; this run: "
            f"{blas_kernel()}):\n\n"
            "| cell | ours (this run) | seed spread: per-seed means (width) | kernel spread: "
            "per-kernel means (width) | per kernel |\n|---|---|---|---|---|\n"
            + "\n".join(lines)
            + f"\n\nThe goal of issue 23, a kernel spread no wider than the seed spread (widths "
            f"at one decimal): met in {n_cells - len(wider)} of {n_cells} cells"
            + (f"; wider in {len(wider)}: " + "; ".join(wider) + "." if wider else "."))


def _not_shown(ctx):
    return ("not in this run (--quick)" if ctx.quick else
            "not in this run (--datasets)")


def _nsv(vals):
    return "n/a" if vals is None else f"{np.mean([v['n_sv'] for v in vals]):.1f}"


def _table(rows, columns):
    head = "| | " + " | ".join(LABELS[c] for c in columns) + " |"
    sep = "|---|" + "---|" * len(columns)
    return "\n".join([head, sep] + ["| " + " | ".join(r) + " |" for r in rows])


def _columns(ctx):
    cols = list(IDA_SETS)
    if ctx.quick:
        cols = ["banana", "breast_cancer", "titanic"]
    elif getattr(ctx, "include_usps", True):
        cols = ["usps"] + cols
    only = getattr(ctx, "datasets", None)
    if only:  # ``--datasets``: compute / show only these columns (pieces of a long run)
        cols = [c for c in cols if c in only]
    return cols


def _n_cells(cols, ctx, n_per_split):
    return sum(len(_splits(c, ctx.quick)) for c in cols) * n_per_split


def _paper(values, col):
    return values[COLUMNS.index(col)]


def _progress(ctx, total, desc):
    from ..utils.progress import progress

    return progress(total=total, desc=desc, disable=None if ctx.progress else True)


@register("wu-table1", "Wu et al. 2006 Table 1: SVM, RS, MRS, RSVM, MRSVM, SLMC at 5%/10%",
          slow=True)
def table1(ctx):
    t0 = time.perf_counter()
    cache = _cache_for(ctx)
    cols = _columns(ctx)
    methods = ("rs", "mrs", "rsvm", "mrsvm", "slmc")
    total = _n_runs(cols, ctx, ("svm",) + methods * 2)
    bar = _progress(ctx, total, "wu-table1")
    rows = []
    svm = {c: _mean(c, None, "svm", cache, ctx, bar) for c in cols}
    rows.append(["SVM N_SV (ours / paper)"] + [
        f"{_nsv(svm[c])} / {_paper(PAPER_NSV, c)}" for c in cols])
    rows.append(["SVM error % (ours / paper)"] + [
        f"{_fmt(svm[c])} / {_paper(PAPER_T1[('svm', None)], c)}" for c in cols])
    notes, means, cells = [], {}, []
    for c in COLUMNS:
        why = None if c in cols else _not_shown(ctx)
        # USPS: the paper's 2683 is the union of the ten classifiers' SVs; compare ours alike
        cells.append(_cell("Wu et al. 2006, Table 1", f"{LABELS[c]} SVM N_SV",
                           _num(svm.get(c), "n_sv_union" if c == "usps" else "n_sv", 1),
                           _paper(PAPER_NSV, c), why))
        cells.append(_cell("Wu et al. 2006, Table 1", f"{LABELS[c]} SVM error", _num(svm.get(c)),
                           _paper(PAPER_T1[("svm", None)], c), why))
    for ratio in (0.05, 0.10):
        for m in methods:
            vals = {c: _mean(c, ratio, m, cache, ctx, bar) for c in cols}
            means[m, ratio] = {c: None if v is None else 100 * float(np.mean(
                [x["error"] for x in v])) for c, v in vals.items()}
            rows.append([f"{int(ratio * 100)}% {NAMES[m]} (ours / paper)"] + [
                _shown(vals[c], _paper(PAPER_T1[(m, ratio)], c), ctx, m) for c in cols])
            for c in COLUMNS:
                cells.append(_cell("Wu et al. 2006, Table 1", f"{LABELS[c]} {int(ratio * 100)}% {NAMES[m]}",
                                   means[m, ratio].get(c), _paper(PAPER_T1[(m, ratio)], c),
                                   None if c in cols else _not_shown(ctx), _spread(vals.get(c)),
                                   _evidence(c, m, vals.get(c), svm.get(c))))
    # RVM rows (hook: _rvm_estimator). N_z / N_SV comes out of training.
    rvm = {c: _mean(c, None, "rvm", cache, ctx, None) for c in cols}
    rows.append(["RVM N_z/N_SV % (ours / paper)"] + [
        f"{_fmt(rvm[c], 'ratio_percent', 1)} / {_paper(PAPER_RVM_RATIO, c)}" for c in cols])
    rows.append(["RVM error % (ours / paper)"] + [
        f"{_fmt(rvm[c])} / {_paper(PAPER_RVM, c)}" for c in cols])
    for c in COLUMNS:
        for what, key, scale, paper in (("N_z/N_SV %", "ratio_percent", 1, PAPER_RVM_RATIO),
                                        ("error", "error", 100, PAPER_RVM)):
            cells.append(_cell("Wu et al. 2006, Table 1", f"{LABELS[c]} RVM {what}",
                               _num(rvm.get(c), key, scale), _paper(paper, c),
                               _partial_reason(c, None, "rvm", cache, ctx) if c in cols
                               else _not_shown(ctx),
                               evidence=_evidence(c, "rvm", rvm.get(c), svm.get(c), key, scale)))
    bar.close()
    if _rs_construct() is None:
        notes.append("RS and MRS: n/a -- sparsekm.reduced_set.construct is not available in this "
                     "build; MRS itself is `ModifiedRS(Z=...)` and works with any RS vectors.")
    notes += [
        _seeds_note(ctx),
        f"Test error in %, mean over IDA splits {_split_text(ctx)} (USPS: the fixed train/test split, "
        "10-class error of ten one-vs-rest classifiers, N_z = ratio x N_SV of each).",
        "SLMC: random initial XVs, L-BFGS <= 100 iterations, inner SVM solved exactly "
        "(free bias). RS: iterated one-term construction (sparsekm.reduced_set.construct), "
        "coefficients by eq. 47, the SVM's own bias. RSVM/MRSVM: same random XVs; "
        "the SVM's (C, gamma) (the paper chose RSVM parameters by 5-fold CV).",
        "USPS N_SV: ours is the mean per one-vs-rest classifier; the paper's 2683 is the union "
        "of all SVs (ours: see the cache's n_sv_union).",
        "RVM: sparsekm.models.RVC (Tipping 2001), gamma = gamma_SVM x "
        f"{list(RVM_GAMMA_FACTORS)} chosen per split by stratified {RVM_FOLDS}-fold "
        "cross-validation inside the training set, then refitted on it (the paper's RVM rows "
        "are Tipping's, \"where 5-fold cross validation was performed for parameter "
        "selection\"). N_z/N_SV % = relevance vectors (bias not counted) / our SVM's SVs on "
        f"the same split. {rvm_usps_protocol(_cell_seconds(cache, RVM_USPS_CELL))}.",
    ]
    targets = []
    slmc10 = {c: v for c, v in means["slmc", 0.10].items() if v is not None}
    if slmc10:
        diff = {c: v - _paper(PAPER_T1[("slmc", 0.10)], c) for c, v in slmc10.items()}
        ok_ida = [c for c in diff if c != "usps" and diff[c] <= 0.5]
        n_ida = len([c for c in diff if c != "usps"])
        met = (diff.get("usps", 0.0) <= 0.5) and len(ok_ida) >= min(4, n_ida)
        targets.append(Target(
            "SLMC at 10 % within 0.5 points of the paper on USPS and >= 4 of 6 IDA sets",
            ", ".join(f"{LABELS[c]} {round(d, 1) + 0.0:+.1f}" for c, d in diff.items())
            + f" points ({len(ok_ida)} of {n_ida} IDA sets within 0.5)",
            ", ".join(f"{LABELS[c]} {_paper(PAPER_T1[('slmc', 0.10)], c)}" for c in diff),
            bool(met)))
    both = [c for c in ("banana", "image") if c in cols
            and means["slmc", 0.05][c] is not None and means["rs", 0.05][c] is not None]
    if both:
        targets.append(Target(
            "SLMC beats RS at 5 % on Banana and Image",
            "; ".join(f"{LABELS[c]} {means['slmc', 0.05][c]:.1f} vs {means['rs', 0.05][c]:.1f}"
                      for c in both),
            "; ".join(f"{LABELS[c]} {_paper(PAPER_T1[('slmc', 0.05)], c)} vs "
                      f"{_paper(PAPER_T1[('rs', 0.05)], c)}" for c in both),
            all(means["slmc", 0.05][c] < means["rs", 0.05][c] for c in both)))
    return Result("wu-table1", "Wu, Schölkopf & Bakır 2006, Table 1", _table(rows, cols),
                  notes=notes, seconds=time.perf_counter() - t0, targets=targets,
                  data={"slmc10": slmc10, "cells": cells},
                  provenance=cache.provenance(total + _n_cells(cols, ctx, 1)))


@register("wu-table2", "Wu et al. 2006 Table 2: SLMC random vs k-means initialisation",
          slow=True)
def table2(ctx):
    t0 = time.perf_counter()
    cache = _cache_for(ctx)
    cols = _columns(ctx)
    total = _n_runs(cols, ctx, ("slmc", "slmc_kmeans") * 2)
    bar = _progress(ctx, total, "wu-table2")
    svm = {c: _peek_svm(c, cache, ctx) for c in cols}  # for the evidence notes only
    rows, cells, spreads = [], [], []
    for ratio in (0.05, 0.10):
        for m in ("slmc", "slmc_kmeans"):
            vals = {c: _mean(c, ratio, m, cache, ctx, bar) for c in cols}
            label = "random" if m == "slmc" else "k-means"
            rows.append([f"{int(ratio * 100)}% {label} (ours / paper)"] + [
                _shown(vals[c], _paper(PAPER_T2[(m, ratio)], c), ctx, m) for c in cols])
            cells += [_cell("Wu et al. 2006, Table 2", f"{LABELS[c]} {int(ratio * 100)}% {label}",
                            _num(vals.get(c)), _paper(PAPER_T2[(m, ratio)], c),
                            None if c in cols else _not_shown(ctx), _spread(vals.get(c)),
                            _evidence(c, m, vals.get(c), svm.get(c))) for c in COLUMNS]
            spreads += [(f"{int(ratio * 100)}% {label}", ratio, m)]
    bar.close()
    return Result("wu-table2", "Wu, Schölkopf & Bakır 2006, Table 2 (SLMC initialisation)",
                  _table(rows, cols) + _kernel_table(spreads, cols, cache, ctx),
                  notes=[f"Test error in %, mean over IDA splits {_split_text(ctx)}; k-means: "
                         "scikit-learn "
                         "KMeans (one init) on the distinct training points.",
                         _seeds_note(ctx)],
                  seconds=time.perf_counter() - t0, data={"cells": cells},
                  provenance=cache.provenance(total))


@register("wu-table3", "Wu et al. 2006 Table 3: sparse KFD vs RS, MRS, RSVM, MRSVM at 10%",
          slow=True)
def table3(ctx):
    t0 = time.perf_counter()
    cache = _cache_for(ctx)
    cols = [c for c in _columns(ctx) if c != "usps"]
    total = _n_runs(cols, ctx, ("svm", "rs", "mrs", "rsvm", "mrsvm", "skfd_cv", "skfd"))
    bar = _progress(ctx, total, "wu-table3")
    rows, cells, spreads = [], [], []
    ida = [c for c in COLUMNS if c != "usps"]

    def why(c):
        return None if c in cols else _not_shown(ctx)

    svm = {c: _mean(c, None, "svm", cache, ctx, bar) for c in cols}
    rows.append(["SVM N_SV (ours / paper)"] + [
        f"{_nsv(svm[c])} / {_paper(PAPER_NSV, c)}" for c in cols])
    rows.append(["SVM error % (ours / paper)"] + [
        f"{_fmt(svm[c])} / {_paper(PAPER_T1[('svm', None)], c)}" for c in cols])
    rows.append(["KFD N_z (paper; not rerun)"] + [
        f"{PAPER_T3_KFD_NZ[IDA_SETS.index(c)]}" for c in cols])
    rows.append(["KFD error % (paper, 100 splits; not rerun)"] + [
        f"{PAPER_T3_KFD[IDA_SETS.index(c)]}" for c in cols])
    for c in ida:
        cells.append(_cell("Wu et al. 2006, Table 3", f"{LABELS[c]} SVM N_SV", _num(svm.get(c), "n_sv", 1),
                           _paper(PAPER_NSV, c), why(c)))
        cells.append(_cell("Wu et al. 2006, Table 3", f"{LABELS[c]} SVM error", _num(svm.get(c)),
                           _paper(PAPER_T1[("svm", None)], c), why(c)))
    for c in ida:
        i = IDA_SETS.index(c)
        cells.append(_cell("Wu et al. 2006, Table 3", f"{LABELS[c]} KFD N_z", None, PAPER_T3_KFD_NZ[i],
                           "KFD not re-run: the paper quotes Schölkopf & Smola (2002), 100 "
                           "splits"))
        cells.append(_cell("Wu et al. 2006, Table 3", f"{LABELS[c]} KFD error", None, PAPER_T3_KFD[i],
                           "KFD not re-run: the paper quotes Schölkopf & Smola (2002), 100 "
                           "splits"))
    for m in ("rs", "mrs", "rsvm", "mrsvm"):
        vals = {c: _mean(c, 0.10, m, cache, ctx, bar) for c in cols}
        rows.append([f"10% {NAMES[m]} (ours / paper)"] + [
            _shown(vals[c], _paper(PAPER_T1[(m, 0.10)], c), ctx, m) for c in cols])
        cells += [_cell("Wu et al. 2006, Table 3", f"{LABELS[c]} 10% {NAMES[m]}", _num(vals.get(c)),
                        _paper(PAPER_T1[(m, 0.10)], c), why(c), _spread(vals.get(c)),
                        _evidence(c, m, vals.get(c), svm.get(c))) for c in ida]
        spreads.append((f"10% {NAMES[m]}", 0.10, m))
    vals = {c: _mean(c, 0.10, "skfd_cv", cache, ctx, bar) for c in cols}
    rows.append(["10% SKFD, mu by 5-fold CV on the training set (ours / paper)"] + [
        _shown(vals[c], PAPER_T3_SKFD[IDA_SETS.index(c)], ctx, "skfd_cv") for c in cols])
    cells += [_cell("Wu et al. 2006, Table 3", f"{LABELS[c]} 10% SKFD", _num(vals.get(c)),
                    PAPER_T3_SKFD[IDA_SETS.index(c)], why(c), _spread(vals.get(c)),
                    _evidence(c, "skfd_cv", vals.get(c), svm.get(c))) for c in ida]
    spreads.append(("10% SKFD (mu by CV)", 0.10, "skfd_cv"))
    vals = {c: _mean(c, 0.10, "skfd", cache, ctx, bar) for c in cols}
    rows.append([f"extra: 10% SKFD, fixed mu = {SKFD_MU:g} (ours / paper)"] + [
        f"{_fmt(vals[c])} / {PAPER_T3_SKFD[IDA_SETS.index(c)]}" for c in cols])
    bar.close()
    return Result("wu-table3", "Wu, Schölkopf & Bakır 2006, Table 3 (sparse KFD)",
                  _table(rows, cols) + _kernel_table(spreads, cols, cache, ctx),
                  notes=[f"SKFD: k-means initial XVs; mu (eq. 49) is not given in the paper: "
                         f"fixed mu = {SKFD_MU:g}, or chosen per split from {list(SKFD_MU_GRID)} by "
                         "5-fold CV on the training set; final beta and b by the SVM problem "
                         "37-39 with the SVM's C.",
                         f"Test error in %, mean over IDA splits {_split_text(ctx)}.",
                         "The SKFD row compared with the paper is the one with mu chosen by "
                         "cross-validation on the training set; the fixed-mu row is an extra "
                         "(mu = 1e-3 fixed a priori, not chosen on test data).",
                         _seeds_note(ctx)],
                  seconds=time.perf_counter() - t0, data={"cells": cells},
                  provenance=cache.provenance(total))


@register("usps-3-vs-8", "Wu et al. 2006 §5.7 example 2: SLMC with 12 XVs on USPS 3 vs 8")
def usps_3_vs_8(ctx):
    from ..plotting import image_grid

    t0 = time.perf_counter()
    X, y, Xt, yt = load_usps(ctx.data_path)
    tr = (y == 3) | (y == 8)
    te = (yt == 3) | (yt == 8)
    X, y, Xt, yt = X[tr], np.where(y[tr] == 3, 1, -1), Xt[te], np.where(yt[te] == 3, 1, -1)
    C, kernel = 10.0, RBF(1.0 / 128)
    svc = SVC(C=C, gamma=1.0 / 128).fit(X, y)
    svm_err = float(np.mean(svc.predict(Xt) != yt))
    clf = SLMC(n_vectors=12, C=C, kernel=kernel, max_iter=30 if ctx.quick else 100,
               random_state=ctx.seed).fit(X, y)
    err = _error(clf, Xt, yt)
    Z = np.asarray(clf.expansion_.vectors)
    beta = np.asarray(clf.expansion_.coef)
    order = np.argsort(-beta)
    path = image_grid(Z[order], (16, 16), ncols=6,
                      titles=[f"beta={b:+.2f}" for b in beta[order]],
                      suptitle="SLMC expansion vectors, USPS '3' (beta > 0) vs '8' (beta < 0)",
                      path=Path(ctx.out_dir) / "usps_3_vs_8_xvs.png")
    table = "\n".join([
        "| | ours | paper |", "|---|---|---|",
        f"| SVM #SV | {svc.n_support_.sum()} | 116 |",
        f"| SVM test error % | {100 * svm_err:.1f} | 1.8 |",
        f"| SLMC #XV | {Z.shape[0]} | 12 |",
        f"| SLMC test error % | {100 * err:.1f} | 1.8 |",
    ])
    notes = [f"Our SVM keeps {svc.n_support_.sum()} SVs against the paper's 116 (same "
             "C = 10, gamma = 1/128); see \"SV counts\" in the reduced-set section for the "
             "same gap on the ten one-vs-rest USPS SVMs (504.5 vs 254) and the (C, gamma) grid "
             "tried. The 12 XVs are therefore a 20x reduction here against the paper's 10x.",
             f"Training digits 3 and 8: {len(y)} samples; test: {len(yt)}. "
             f"L-BFGS iterations: {int(clf.n_iter_[0])}; W(Z) {clf.W_history_[0][0]:.1f} -> "
             f"{clf.objective_[0]:.1f}."]
    tab = "Wu et al. 2006, §5.7 USPS 3 vs 8"
    cells = [_cell(tab, "SVM #SV", int(svc.n_support_.sum()), 116),
             _cell(tab, "SVM test error %", 100 * svm_err, 1.8),
             _cell(tab, "SLMC #XV", int(Z.shape[0]), 12),
             _cell(tab, "SLMC test error %", 100 * err, 1.8)]
    return Result("usps-3-vs-8", "Wu et al. 2006 §5.7, example 2 (USPS 3 vs 8, 12 XVs)", table,
                  notes=notes, figures=[path], seconds=time.perf_counter() - t0,
                  data={"cells": cells})


def _warm_code_keys():
    """Read the sources behind every cell's code key at import time (the running code)."""
    for method in ("svm", "rs", "slmc", "skfd_cv", "rvm", "rvm_fast"):
        cell_code_key(method)


_warm_code_keys()
