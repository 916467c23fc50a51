"""Run-time options of the evaluation engine, apart from any estimator's parameters.

Three knobs (``get_config()`` shows them):

``backend`` : {"numpy", "torch"}, default "numpy"
    Engine used for numpy inputs. Tensor inputs always use torch (see
    :mod:`sparsekm.backend`).
``device`` : str or None, default None
    torch device for numpy inputs under ``backend="torch"``; ``None`` is CUDA when
    available, else CPU. Tensor inputs stay on their own device.
``n_threads`` : int or None, default None
    Threads of the numpy engine. ``None`` follows the BLAS pool: as many threads
    as the BLAS library currently uses (so ``threadpoolctl.threadpool_limits(1)``
    around a call makes it serial). The engine splits its row blocks over that
    many threads and limits BLAS to one thread inside them, so the element-wise
    passes (norms, ``exp``) run in parallel too and nothing is oversubscribed.

Use :func:`threads` to set the thread count of everything at once (our pool,
BLAS/OpenMP through threadpoolctl, torch's intra-op pool)::

    >>> import sparsekm
    >>> with sparsekm.config.threads(1):
    ...     sparsekm.config.get_config()["n_threads"]
    1
"""

from __future__ import annotations

import contextlib
import sys
import threading

from threadpoolctl import threadpool_limits

from .utils.validation import check_scalar

__all__ = ["get_config", "set_config", "config_context", "threads", "single_threaded_blas"]

#: The array backends :mod:`sparsekm.backend` implements (defined here, with the option that
#: names them, so that ``config`` needs nothing from ``backend``).
BACKENDS = ("numpy", "torch")

_DEFAULTS = {"backend": "numpy", "device": None, "n_threads": None}
_config = dict(_DEFAULTS)


def get_config():
    """A copy of the current options."""
    return dict(_config)


def _validated(backend, device, n_threads):
    out = {}
    if backend is not None:
        if backend not in BACKENDS:
            raise ValueError(f"The 'backend' option must be one of {BACKENDS}. Got {backend!r} "
                             f"instead.")
        out["backend"] = backend
    if device is not None:
        if not isinstance(device, str):
            device = str(device)
        out["device"] = device
    if n_threads is not None:
        out["n_threads"] = check_scalar(n_threads, "n_threads", "sparsekm.config", kind="int",
                                        lower=1)
    return out


def set_config(backend=None, device=None, n_threads=None):
    """Change options globally (``None`` leaves an option unchanged).

    Use :func:`reset_config` to go back to the defaults.
    """
    _config.update(_validated(backend, device, n_threads))


def reset_config():
    """Restore the default options."""
    _config.clear()
    _config.update(_DEFAULTS)


@contextlib.contextmanager
def config_context(*, backend=None, device=None, n_threads=None):
    """Temporarily change options (``None`` leaves an option unchanged)."""
    new = _validated(backend, device, n_threads)
    old = get_config()
    _config.update(new)
    try:
        yield get_config()
    finally:
        _config.clear()
        _config.update(old)


@contextlib.contextmanager
def threads(n):
    """Use ``n`` threads everywhere inside the block.

    Sets the engine's ``n_threads``, limits the BLAS and OpenMP pools with
    ``threadpoolctl.threadpool_limits(n)`` and, if torch has been imported, its
    intra-op pool with ``torch.set_num_threads(n)``; all are restored on exit.

    Parameters
    ----------
    n : int >= 1
    """
    n = check_scalar(n, "n", "sparsekm.config.threads", kind="int", lower=1)
    torch = sys.modules.get("torch")
    torch_old = torch.get_num_threads() if torch is not None else None
    with threadpool_limits(limits=n), config_context(n_threads=n):
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield n
        finally:
            if torch is not None:
                torch.set_num_threads(torch_old)


# -- the engine's view of the BLAS pool --------------------------------------------------
_lock = threading.Lock()
_controller = None
_blas_state = {"depth": 0, "saved": None}


def _blas():
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController().select(user_api="blas")
    return _controller


def _blas_threads():
    """Threads the BLAS pool uses now (its value before our own limiting, if active)."""
    with _lock:
        if _blas_state["depth"]:
            return _blas_state["saved"]
    libs = _blas().lib_controllers
    return max((lib.num_threads for lib in libs), default=1)


def effective_n_threads():
    """Threads the numpy engine will use: ``n_threads`` or the BLAS pool's size."""
    n = _config["n_threads"]
    return int(n) if n is not None else max(int(_blas_threads()), 1)


@contextlib.contextmanager
def single_threaded_blas():
    """Limit BLAS to one thread while the engine's own pool runs (re-entrant, thread-safe)."""
    with _lock:
        if _blas_state["depth"] == 0:
            libs = _blas().lib_controllers
            _blas_state["saved"] = max((lib.num_threads for lib in libs), default=1)
            _blas_state["limiter"] = _blas().limit(limits=1)
        _blas_state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _blas_state["depth"] -= 1
            if _blas_state["depth"] == 0:
                _blas_state.pop("limiter").restore_original_limits()
                _blas_state["saved"] = None
