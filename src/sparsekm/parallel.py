"""Parallel and distributed work: dask arrays in, dask arrays out; joblib for fits.

``pip install sparsekm[dask]``. Two independent kinds of parallelism:

**Row-wise evaluation of dask arrays.** Every row of a kernel machine's output
depends on that row of the input only, so prediction and transformation of a
``dask.array.Array`` are a ``map_blocks`` over chunks of rows, with the model sent
to the workers once (one graph key) rather than embedded in every task.

* :func:`map_row_blocks` is the general tool: ``func(chunk, *shared, **kwargs)``
  for every row chunk;
* :func:`apply_by_rows` runs a fitted estimator's method over the row chunks;
* :func:`dask_rowwise` decorates an estimator's row-wise method so that a dask
  array goes through :func:`apply_by_rows` and anything else through the method::

      @dask_rowwise
      def transform(self, X):
          ...

:meth:`sparsekm.KernelExpansion.decision_function` and the ``predict``,
``decision_function``, ``transform`` (and other row-wise) methods of every
estimator in :mod:`sparsekm.models` and :mod:`sparsekm.approx` accept dask arrays
this way. Nothing is computed until the caller asks (``.compute()``,
``.persist()``, ``da.store``); with a ``dask.distributed`` client the chunks run on
its workers::

    >>> import dask.array as da  # doctest: +SKIP
    >>> Xd = da.from_zarr("big.zarr")  # (n_samples, n_features), chunks of rows  # doctest: +SKIP
    >>> labels = clf.predict(Xd)  # lazy dask array, one task per row chunk  # doctest: +SKIP
    >>> labels.compute()  # or client.compute(labels)  # doctest: +SKIP

**Independent problems through joblib.** :func:`parallel_map` runs a list of
independent tasks through ``joblib.Parallel``: the per-output reductions of
:func:`sparsekm.reduced_set.reduce_many` (and so the one-vs-rest reduction of
:class:`~sparsekm.models.ReducedSetClassifier`), and the one-vs-rest problems of
:class:`~sparsekm.models.SLMC`, :class:`~sparsekm.models.SparseKFD`,
:class:`~sparsekm.models.RSVM`, :class:`~sparsekm.models.ModifiedRSVM` and
:class:`~sparsekm.models.ModifiedRS` (their ``n_jobs`` parameter). All random
numbers are drawn before the tasks are dispatched, so the result does not depend
on ``n_jobs`` or the backend. joblib's ``dask`` backend sends the tasks to a
``dask.distributed`` cluster::

    >>> import joblib  # doctest: +SKIP
    >>> from distributed import Client  # doctest: +SKIP
    >>> client = Client("scheduler-address:8786")  # doctest: +SKIP
    >>> with joblib.parallel_backend("dask"):  # doctest: +SKIP
    ...     clf = ReducedSetClassifier(ovr_svm, n_vectors=25, n_jobs=-1).fit(X, y)

Warnings raised inside the tasks (e.g. a singular ``K^z``) are re-issued in the
calling process, so they are not lost in worker logs.

dask is optional and imported only when a dask array is passed in.
"""

from __future__ import annotations

import functools
import os
import sys
import uuid
import warnings

import numpy as np

__all__ = ["is_dask_array", "map_row_blocks", "apply_by_rows", "dask_rowwise", "parallel_map"]


def is_dask_array(X):
    """True when ``X`` is a ``dask.array.Array`` (without importing dask)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def map_row_blocks(func, X, *shared, n_outputs=None, dtype=np.float64, **kwargs):
    """Lazily apply ``func(chunk, *shared, **kwargs)`` to each chunk of rows of ``X``.

    Parameters
    ----------
    func : callable
        Maps a numpy array of shape (n_chunk, n_features) to an array of shape
        (n_chunk,) (``n_outputs=None``) or (n_chunk, n_outputs). It must be
        picklable (a module-level function) for a distributed cluster.
    X : dask.array.Array of shape (n_samples, n_features)
        Column chunks are merged first (each task needs whole rows).
    *shared : objects
        Models and other large arguments, each wrapped in one ``dask.delayed``
        so that the scheduler ships it to a worker once, not once per task.
    n_outputs : int or None, default=None
        Width of the output; ``None`` for a 1-D output.
    dtype : dtype, default=float64
        dtype of the output.
    **kwargs
        Small keyword arguments passed to every call as they are.

    Returns
    -------
    dask.array.Array of shape (n_samples,) or (n_samples, n_outputs)
        Row chunks as ``X``'s.

    Examples
    --------
    >>> import numpy as np, dask.array as da  # doctest: +SKIP
    >>> X = da.random.random((10_000, 3), chunks=(2_500, 3))  # doctest: +SKIP
    >>> w = np.array([1.0, 2.0, 3.0])  # doctest: +SKIP
    >>> y = map_row_blocks(lambda B, w: B @ w, X, w)  # doctest: +SKIP
    >>> y.chunks  # doctest: +SKIP
    ((2500, 2500, 2500, 2500),)
    """
    import dask
    import dask.array as da

    if not isinstance(X, da.Array):
        raise TypeError(f"X must be a dask.array.Array; got {type(X).__name__}.")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    dtype = np.dtype(dtype)
    keys = [dask.delayed(obj, pure=True, traverse=False) for obj in shared]
    if n_outputs is None:
        return da.map_blocks(func, X, *keys, drop_axis=1, dtype=dtype,
                             meta=np.empty((0,), dtype=dtype), **kwargs)
    n_outputs = int(n_outputs)
    return da.map_blocks(func, X, *keys, chunks=(X.chunks[0], (n_outputs,)), dtype=dtype,
                         meta=np.empty((0, 0), dtype=dtype), **kwargs)


def _call_method(X, obj, method):
    return getattr(obj, method)(X)


def apply_by_rows(obj, method, X, *, n_outputs="infer", dtype=None):
    """``getattr(obj, method)`` over the row chunks of a dask array, ``obj`` sent once.

    Parameters
    ----------
    obj : object
        A fitted estimator (or anything with the method); pickled once.
    method : str
        Name of a row-wise method: ``"predict"``, ``"transform"``,
        ``"decision_function"``, ...
    X : dask.array.Array of shape (n_samples, n_features)
    n_outputs : int, None or "infer", default="infer"
        Output width (``None``: 1-D). ``"infer"`` (and ``dtype=None``) calls the
        method once on a single row of zeros to find the output's shape and dtype.
    dtype : dtype or None, default=None

    Returns
    -------
    dask.array.Array
    """
    if not hasattr(obj, method):
        raise AttributeError(f"{type(obj).__name__} has no method {method!r}.")
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
    if n_outputs == "infer" or dtype is None:
        probe = np.asarray(getattr(obj, method)(np.zeros((1, X.shape[1]), dtype=X.dtype)))
        if n_outputs == "infer":
            n_outputs = None if probe.ndim == 1 else probe.shape[1]
        if dtype is None:
            dtype = probe.dtype
    return map_row_blocks(_call_method, X, obj, n_outputs=n_outputs, dtype=dtype, method=method)


def dask_rowwise(method):
    """Decorate a row-wise method ``method(self, X)`` to accept a dask array.

    A ``dask.array.Array`` ``X`` gives ``apply_by_rows(self, method.__name__, X)``
    (a lazy dask array with ``X``'s row chunks); any other input calls the method.
    Only methods whose output row ``i`` depends on input row ``i`` alone (and not on
    the chunking) may be decorated. Extra arguments are not supported with a dask
    array.
    """
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        if is_dask_array(X):
            if args or kwargs:
                raise TypeError(f"{type(self).__name__}.{name} takes no further arguments when "
                                "X is a dask array.")
            return apply_by_rows(self, name, X)
        return method(self, X, *args, **kwargs)

    return wrapper


#: Identifies this process: a task running here issues its warnings directly
#: (``catch_warnings`` is not thread-safe, and threading backends run tasks here).
_PROCESS_TOKEN = (os.getpid(), uuid.uuid4().hex)


def _recording_warnings(func, args, caller):
    if caller == _PROCESS_TOKEN:
        return func(*args), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = func(*args)
    return out, [w.message for w in caught]


def parallel_map(func, tasks, *, n_jobs=None):
    """``[func(*args) for args in tasks]`` through ``joblib.Parallel``.

    Parameters
    ----------
    func : callable
        Picklable (a module-level function or a bound method of a picklable
        object) for process- or cluster-based backends.
    tasks : iterable of tuple
        Positional arguments of each call.
    n_jobs : int or None, default=None
        joblib's ``n_jobs``: ``None`` is one job unless inside a
        ``joblib.parallel_backend``/``parallel_config`` context (whose ``n_jobs``
        then applies), ``-1`` all cores (or all workers of a dask cluster).

    Returns
    -------
    list
        The results in the order of ``tasks``. A single task runs in this
        process.

    Notes
    -----
    Warnings raised by a task in another process (loky, dask workers) are
    recorded there and re-issued here, in task order, after all tasks have
    finished; tasks that run in this process (``n_jobs=None``, threading
    backends) issue them as usual.
    """
    from joblib import Parallel, delayed

    tasks = [tuple(args) for args in tasks]
    if len(tasks) <= 1:  # nothing to run side by side: no worker start-up, no transfers
        return [func(*args) for args in tasks]
    outputs = Parallel(n_jobs=n_jobs)(delayed(_recording_warnings)(func, args, _PROCESS_TOKEN)
                                   for args in tasks)
    results = []
    for out, messages in outputs:
        for message in messages:
            warnings.warn(message, stacklevel=2)
        results.append(out)
    return results
