"""BLAS threading for loops of small solves (threadpoolctl)."""

from __future__ import annotations

import contextlib

__all__ = ["small_solve_threads", "SMALL_SOLVE_WORK"]

#: Multiply-adds of one step's largest product below which a loop of such steps (an
#: L-BFGS iteration of the SLMC over ``Z``, of the joint refine, a fixed-point
#: pre-image step) runs with one BLAS/OpenMP thread. Below it a step takes a few
#: milliseconds and spinning threads cost more than they save: the SLMC with 50 vectors
#: on the embedded digits took 3.2 s with one OpenBLAS thread and 12.9 s with two on a
#: busy 2-core machine, for the same model (issue 39).
SMALL_SOLVE_WORK = 1e8


def small_solve_threads(work):
    """A context: one BLAS/OpenMP thread when ``work`` (multiply-adds of one step) is
    below :data:`SMALL_SOLVE_WORK`, else the threading as it is.

    The thread count never changes a result beyond rounding; sparsekm's own evaluator
    follows the BLAS pool (see :mod:`sparsekm.config`).
    """
    if work >= SMALL_SOLVE_WORK:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)
