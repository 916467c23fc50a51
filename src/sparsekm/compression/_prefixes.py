"""Prefixes of one reduced-set construction: :func:`construct_prefixes`."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils import check_random_state

from ..expansion import KernelExpansion
from ..reduced_set import construct, optimal_coefficients
from ..utils.validation import check_scalar

__all__ = ["construct_prefixes"]


def _output_parts(psi, shared):
    """Expansions reduced independently: one per output, or ``psi`` itself (shared/binary)."""
    if psi.is_multioutput and psi.n_outputs > 1 and not shared:
        return [psi.output(k).merge_duplicates() for k in range(psi.n_outputs)]
    return [psi]


def construct_prefixes(psi, n_max, *, shared=False, n_init=5, max_iter=200, random_state=None):
    """One reduced-set construction whose prefixes give every smaller reduced set.

    Runs :func:`~sparsekm.reduced_set.construct` (phase 1) with ``n_max`` vectors per
    output (``shared=False``; each output with its own seed, exactly as
    :func:`~sparsekm.reduced_set.reduce_expansion` draws them) or in total
    (``shared=True``) and returns a function ``prefix(m)`` giving the ``m``-vector
    reduced expansion: the first ``m`` vectors of each output's run with their
    Proposition-8 coefficients ``beta = (K^z)^-1 K^zx alpha`` re-computed. Up to
    rounding this equals ``reduce_expansion(psi, m, method="construct", ...)`` with
    the same ``random_state``. An output with at most ``m`` terms is copied exactly.

    Parameters
    ----------
    psi : KernelExpansion
        Single- or multi-output (one column per one-vs-rest classifier).
    n_max : int >= 1
        Largest size needed.
    shared : bool, default=False
    n_init, max_iter, random_state
        As in :func:`~sparsekm.reduced_set.construct`.

    Returns
    -------
    prefix : callable ``m -> KernelExpansion``
        With ``psi``'s intercept (re-fit thresholds afterwards if wanted).
    """
    n_max = check_scalar(n_max, "n_max", "construct_prefixes", kind="int", lower=1)
    parts = _output_parts(psi, shared)
    if len(parts) > 1:
        seeds = check_random_state(random_state).randint(np.iinfo(np.int32).max,
                                                         size=len(parts))
    else:
        seeds = [random_state]
    runs = []
    for part, seed in zip(parts, seeds, strict=True):
        n_terms = part.n_terms
        # a run with fewer vectors than terms, so that every m < n_terms has a real prefix
        n_run = min(n_max, max(n_terms - 1, 1))
        if n_terms <= 1:
            runs.append(None)
            continue
        res = construct(part, n_run, shared=bool(shared) if part.is_multioutput else None,
                        n_init=n_init, max_iter=max_iter, random_state=seed)
        runs.append(np.asarray(res.expansion.vectors, dtype=np.float64))

    def prefix(m):
        m = check_scalar(m, "m", "prefix", kind="int", lower=1)
        blocks = []
        for part, Z in zip(parts, runs, strict=True):
            if Z is None or m >= part.n_terms:
                blocks.append((np.asarray(part.vectors, dtype=np.float64),
                               np.asarray(part.coef, dtype=np.float64)))
                continue
            Zm = Z[:min(m, Z.shape[0])]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                blocks.append((Zm, np.asarray(optimal_coefficients(part, Zm))))
        if len(parts) == 1:
            Z, B = blocks[0]
            return KernelExpansion(Z, B, psi.kernel, psi.intercept)
        Z = np.vstack([b[0] for b in blocks])
        coef = np.zeros((Z.shape[0], len(parts)))
        start = 0
        for k, (Zk, Bk) in enumerate(blocks):
            coef[start:start + Zk.shape[0], k] = np.ravel(Bk)
            start += Zk.shape[0]
        return KernelExpansion(Z, coef, psi.kernel, psi.intercept)

    return prefix
