"""Evaluation beyond one machine's memory: dask arrays in, dask arrays out.

``pip install sparsekm[dask]``. Every row of a kernel machine's output depends on
that row of the input only, so prediction and transformation of a
``dask.array.Array`` are a ``map_blocks`` over chunks of rows, with the model sent
to the workers once (one graph key) rather than embedded in every task.

* :func:`map_row_blocks` is the general tool: ``func(chunk, *shared, **kwargs)``
  for every row chunk;
* :func:`apply_by_rows` is what an estimator's ``predict``/``transform`` calls
  when it is given a dask array::

      def transform(self, X):
          check_is_fitted(self)
          if is_dask_array(X):
              return apply_by_rows(self, "transform", X)
          ...

:meth:`sparsekm.KernelExpansion.decision_function`,
:class:`sparsekm.models.RandomizedKernelPCA` and
:class:`sparsekm.approx.GreedyBasis` accept dask arrays this way. Nothing is
computed until the caller asks (``.compute()``, ``.persist()``, ``da.store``);
with a ``dask.distributed`` client the chunks run on its workers.

dask is optional and imported only when a dask array is passed in.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["is_dask_array", "map_row_blocks", "apply_by_rows"]


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
