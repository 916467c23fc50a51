"""One entry point for every reduced-set method, and many expansions in parallel.

* :func:`reduce_expansion` -- approximate one expansion (single- or multi-output)
  by the named method (construction, phase 2, selection);
* :func:`reduce_many` -- reduce several independent expansions, e.g. the
  one-vs-rest classifiers of a multi-class SVM, in parallel through joblib (which
  can run on a ``dask.distributed`` cluster, see :mod:`sparsekm.parallel`);
* :func:`stack_results` -- the per-output results as one multi-output result.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from ..expansion import KernelExpansion
from ..parallel import parallel_map
from ..utils.validation import check_scalar
from ._base import ReducedSetResult, _check_expansion
from .construction import construct
from .selection import select_backward, select_kpca, select_l1, select_l1_multi

__all__ = ["METHODS", "reduce_expansion", "reduce_many", "stack_results", "check_method", "check_applicable"]

#: The methods understood by :func:`reduce_expansion`.
METHODS = ("construct", "construct+refine", "select-kpca", "select-backward", "select-l1")


def check_method(method, owner):
    """Refuse a reduction method not in :data:`METHODS` (a ValueError naming ``owner``)."""
    if method not in METHODS:
        raise ValueError(
            f"The 'method' parameter of {owner} must be one of {list(METHODS)}. Got {method!r} "
            "instead.")


_CONSTRUCT = ("construct", "construct+refine")


def check_applicable(method, c, lam, refine_max_iter, n_sweeps, step, owner):
    """Options of another method are refused, never silently ignored."""
    given = []
    if method != "select-l1":
        if lam is not None:
            given.append(f"lam={lam!r}")
        if c != "inverse":
            given.append(f"c={c!r}")
    if method not in _CONSTRUCT:
        if n_sweeps != 0:
            given.append(f"n_sweeps={n_sweeps!r}")
        if step != "one-term":
            given.append(f"step={step!r}")
    if method != "construct+refine" and refine_max_iter != 300:
        given.append(f"refine_max_iter={refine_max_iter!r}")
    if given:
        raise ValueError(
            f"{owner}: {', '.join(given)} {'has' if len(given) == 1 else 'have'} no effect "
            f"with method={method!r} and would be ignored (lam and c: 'select-l1'; n_sweeps "
            "and step: 'construct' and "
            "'construct+refine'; refine_max_iter: 'construct+refine'); leave it at its default "
            "or choose that method.")


def _l1_multi_for_size(expansion, n_vectors, c):
    """``select_l1_multi`` with exactly ``n_vectors`` shared vectors (a lambda path)."""
    return select_l1_multi(expansion, n_vectors=n_vectors, c=c, max_iter=5000, tol=1e-6)


def _reduce_single(expansion, n_vectors, method, c, lam, n_init, max_iter, refine_max_iter,
                   n_sweeps, random_state, step="one-term", backend=None, device=None):
    """One single-output expansion, restricted to its own (non-zero, distinct) terms."""
    e = expansion.merge_duplicates()
    if e.n_terms == 0:  # Psi = 0 (e.g. cancelling duplicates): exact with no vector
        return ReducedSetResult(e, 0.0, np.zeros(0), support=np.zeros(0, int), norm2=0.0)
    if method in ("construct", "construct+refine"):
        return construct(e, n_vectors, refine=method == "construct+refine", n_init=n_init,
                         max_iter=max_iter, refine_max_iter=refine_max_iter, n_sweeps=n_sweeps,
                         step=step, random_state=random_state, backend=backend,
                         device=device)
    if method == "select-kpca":
        return select_kpca(e, n_vectors)
    if method == "select-backward":
        return select_backward(e, n_vectors)
    if lam is not None:
        return select_l1(e, lam, c=c)
    return select_l1(e, n_vectors=n_vectors, c=c)


def reduce_many(expansions, n_vectors, *, method="construct", c="inverse", lam=None, n_init=5,
                max_iter=200, refine_max_iter=300, n_sweeps=0, step="one-term", random_state=None,
                n_jobs=None, backend=None, device=None):
    """Reduce several independent single-output expansions, in parallel through joblib.

    Each expansion is approximated on its own (its zero and repeated terms merged
    first by :meth:`~sparsekm.KernelExpansion.compress`) with ``n_vectors``
    vectors by :func:`reduce_expansion`. One seed per expansion is drawn from
    ``random_state`` before any work starts, so the results are the same for
    every ``n_jobs`` and every joblib backend: ``reduce_many(E, n, n_jobs=4)``
    equals ``[reduce_expansion(e, n, random_state=s) for e, s in zip(E, seeds)]``
    exactly.

    Parameters
    ----------
    expansions : sequence of KernelExpansion
        Single-output expansions, e.g. ``[psi.output(k) for k in
        range(psi.n_outputs)]`` for the one-vs-rest classifiers of a multi-class
        SVM.
    n_vectors : int >= 1
        Reduced-set size of each expansion.
    method : {"construct", "construct+refine", "select-kpca", "select-backward", "select-l1"}
    c, lam, n_init, max_iter, refine_max_iter, n_sweeps, step, backend, device
        As in :func:`reduce_expansion`.
    random_state : int, RandomState instance or None, default=None
        Source of the per-expansion seeds.
    n_jobs : int or None, default=None
        joblib's ``n_jobs`` (``None``: sequential unless inside a
        ``joblib.parallel_backend`` context; ``-1``: all cores). With
        ``joblib.parallel_backend("dask")`` the expansions are reduced on the
        workers of the current ``dask.distributed`` client.

    Returns
    -------
    list of ReducedSetResult
        One per expansion, in order. :func:`stack_results` turns them into one
        multi-output result.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsekm import KernelExpansion, RBF
    >>> from sparsekm.reduced_set import reduce_many
    >>> rng = np.random.default_rng(0)
    >>> psis = [KernelExpansion(rng.normal(size=(30, 2)), rng.normal(size=30), RBF(0.5))
    ...         for _ in range(3)]
    >>> results = reduce_many(psis, 4, random_state=0, n_jobs=2)
    >>> [r.expansion.n_terms for r in results]
    [4, 4, 4]
    """
    check_method(method, "reduce_many")
    check_applicable(method, c, lam, refine_max_iter, n_sweeps, step, "reduce_many")
    check_scalar(n_vectors, "n_vectors", "reduce_many", kind="int", lower=1)
    expansions = list(expansions)
    for e in expansions:
        _check_expansion(e, "reduce_many")
        if e.is_multioutput and e.n_outputs != 1:
            raise ValueError(
                "reduce_many needs single-output expansions; split a multi-output one with "
                f"[psi.output(k) for k in range(psi.n_outputs)] (got {e.n_outputs} outputs).")
    seeds = check_random_state(random_state).randint(np.iinfo(np.int32).max, size=len(expansions))
    tasks = [(e if not e.is_multioutput else e.output(0), n_vectors, method, c, lam, n_init,
              max_iter, refine_max_iter, n_sweeps, int(seed), step, backend, device)
             for e, seed in zip(expansions, seeds, strict=True)]
    return parallel_map(_reduce_single, tasks, n_jobs=n_jobs)


def stack_results(results, kernel=None):
    """Per-output results of :func:`reduce_many` as one multi-output result.

    The vectors of all results are stacked; output ``k`` has the coefficients of
    result ``k`` on its own block and zeros elsewhere, and the intercept of
    result ``k``. ``objective``/``norm2`` become arrays over the outputs,
    ``objective_path`` the per-output paths side by side (shorter ones continued
    with their last value), ``n_iter`` the sum, and ``info`` entries holding one
    number (or 1-D array of one length) per output become an array with one
    entry (column) per output, other entries a list over the outputs.

    Parameters
    ----------
    results : sequence of ReducedSetResult
        Single-output results with one kernel.
    kernel : Kernel, optional
        Kernel of the stacked expansion (needed only when ``results`` is empty);
        defaults to the kernel of the results.

    Returns
    -------
    ReducedSetResult
    """
    results = list(results)
    if not results:
        raise ValueError("stack_results needs at least one result.")
    kernel = results[0].expansion.kernel if kernel is None else kernel
    for r in results:
        if r.expansion.kernel != kernel:
            raise ValueError(f"stack_results needs one kernel; got {r.expansion.kernel!r} "
                             f"and {kernel!r}.")
    sizes = [r.expansion.n_terms for r in results]
    d = results[0].expansion.n_features
    Z = np.vstack([np.asarray(r.expansion.vectors, dtype=np.float64).reshape(-1, d)
                   for r in results])
    coef = np.zeros((Z.shape[0], len(results)))
    start = 0
    for k, (size, r) in enumerate(zip(sizes, results, strict=True)):
        coef[start:start + size, k] = np.asarray(r.expansion.coef).reshape(size)
        start += size
    intercept = np.array([float(np.ravel(r.expansion.intercept)[0]) for r in results])
    expansion = KernelExpansion(Z, coef, kernel, intercept)
    paths = [np.ravel(r.objective_path) for r in results]
    L = max(1, max(p.size for p in paths))
    path = np.column_stack([
        np.concatenate([p, np.full(L - p.size, p[-1] if p.size else float(r.objective))])
        for p, r in zip(paths, results, strict=True)])
    info = {}
    for key in results[0].info:
        values = [r.info.get(key) for r in results]
        if all(v is not None and np.ndim(v) == 0 for v in values):
            info[key] = np.array([float(v) for v in values])
        elif all(v is not None and np.ndim(v) == 1 for v in values) and \
                len({np.size(v) for v in values}) == 1:
            info[key] = np.column_stack(values)
        else:
            info[key] = values
    return ReducedSetResult(
        expansion, np.array([float(r.objective) for r in results]), path, support=None,
        norm2=np.array([float(r.norm2) for r in results]),
        n_iter=int(sum(int(r.n_iter) for r in results)), info=info)


def reduce_expansion(expansion, n_vectors, *, method="construct", shared=False, c="inverse",
                     lam=None, n_init=5, max_iter=200, refine_max_iter=300, n_sweeps=0,
                     step="one-term", random_state=None, n_jobs=None, backend=None,
                     device=None):
    """Approximate ``expansion`` with ``n_vectors`` terms by the named method.

    The common entry point of the estimators (and of
    :func:`~sparsekm.models.reduce_kernel_pca`).

    Parameters
    ----------
    expansion : KernelExpansion or DaskExpansion
        A :class:`~sparsekm.reduced_set.distributed.DaskExpansion` (vectors and
        coefficients as dask arrays, e.g. 10^6 terms) is reduced on the cluster by
        :func:`~sparsekm.reduced_set.distributed.construct_distributed` (its kernel
        sums map-reduced over the partitions; ``method="construct"`` only).
    n_vectors : int
        Vectors per output (``shared=False``) or in total (``shared=True``).
    method : {"construct", "construct+refine", "select-kpca", "select-backward", "select-l1"}
    shared : bool
        Multi-output expansions: one shared set of vectors for all outputs
        (section 5) or one set per output.
    c : {"uniform", "inverse"}
        Weights of the L1 selection (eq. 66/70).
    lam : float, optional
        L1 selection: fixed ``lambda`` instead of aiming at ``n_vectors``.
    n_init, max_iter, refine_max_iter, n_sweeps, step, random_state
        Passed to :func:`~sparsekm.reduced_set.construct`.
    n_jobs : int or None, default=None
        Multi-output expansions with ``shared=False``: the outputs are reduced
        independently by :func:`reduce_many` with this many joblib jobs (the
        result does not depend on ``n_jobs``).
    backend : {"numpy", "torch"} or None, default=None
        Engine of the construction methods' kernel sums (``None``:
        :func:`sparsekm.config.get_config`); with ``"torch"`` the expansion's vectors
        are put on ``device`` once per construction (see
        :func:`~sparsekm.reduced_set.construct`). The selection methods ignore it.
    device : str or None, default=None
        torch device (``None``: the configured one, else CUDA when available).

    Returns
    -------
    ReducedSetResult
    """
    check_method(method, "reduce_expansion")
    check_applicable(method, c, lam, refine_max_iter, n_sweeps, step, "reduce_expansion")
    if type(expansion).__name__ == "DaskExpansion":
        from .distributed import construct_distributed

        if method != "construct" or shared:
            raise ValueError("reduce_expansion of a DaskExpansion (dask-array vectors) supports "
                             f"method='construct' only; got method={method!r}.")
        check_scalar(n_vectors, "n_vectors", "reduce_expansion", kind="int", lower=1)
        return construct_distributed(expansion, n_vectors, n_init=n_init, max_iter=max_iter)
    expansion = _check_expansion(expansion, "reduce_expansion")
    multi = expansion.is_multioutput and expansion.n_outputs > 1
    if multi and shared:
        if method in ("construct", "construct+refine"):
            return construct(expansion, n_vectors, shared=True,
                             refine=method == "construct+refine", n_init=n_init,
                             max_iter=max_iter, refine_max_iter=refine_max_iter,
                             n_sweeps=n_sweeps, step=step, random_state=random_state,
                             backend=backend, device=device)
        if method == "select-kpca":
            return select_kpca(expansion, n_vectors)
        if method == "select-backward":
            return select_backward(expansion, n_vectors)
        if lam is not None:
            return select_l1_multi(expansion, lam, c=c)
        return _l1_multi_for_size(expansion, n_vectors, c)
    kwargs = dict(method=method, c=c, lam=lam, n_init=n_init, max_iter=max_iter,
                  refine_max_iter=refine_max_iter, n_sweeps=n_sweeps, step=step,
                  backend=backend, device=device)
    if not expansion.is_multioutput:
        if method in ("construct", "construct+refine"):
            # all of construct's own checks and conventions (e.g. exact copies)
            return construct(expansion, n_vectors, refine=method == "construct+refine",
                             n_init=n_init, max_iter=max_iter, refine_max_iter=refine_max_iter,
                             n_sweeps=n_sweeps, step=step, random_state=random_state,
                             backend=backend, device=device)
        return _reduce_single(expansion, n_vectors, random_state=random_state, **kwargs)
    outputs = [expansion.output(k) for k in range(expansion.n_outputs)]
    results = reduce_many(outputs, n_vectors, random_state=random_state, n_jobs=n_jobs,
                          **kwargs)
    return stack_results(results, expansion.kernel)
