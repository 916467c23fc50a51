"""Deprecations that last one release (a leaf module: imports nothing of sparsekm)."""

from __future__ import annotations

import functools
import inspect
import warnings

__all__ = ["keyword_only_args"]


def keyword_only_args(init):
    """Accept the keyword-only hyperparameters of ``init`` positionally, with a FutureWarning.

    scikit-learn's convention (since 0.23): hyperparameters are keyword-only,
    ``def __init__(self, n_components=None, *, kernel=None, ...)``. Calls written for the
    old all-positional signature keep working for one release: the surplus positional
    arguments are bound, in the signature's order, to the keyword-only parameters (whose
    order is the old positional order), and a ``FutureWarning`` names them. The wrapper
    keeps ``init``'s signature (``functools.wraps``), so ``get_params`` is unchanged.

    Examples
    --------
    >>> import warnings
    >>> class Est:
    ...     @keyword_only_args
    ...     def __init__(self, n=1, *, C=1.0, tol=1e-3):
    ...         self.n, self.C, self.tol = n, C, tol
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     e = Est(2, 5.0)
    >>> (e.n, e.C, e.tol), w[0].category.__name__
    ((2, 5.0, 0.001), 'FutureWarning')
    """
    sig = inspect.signature(init)
    positional = [p.name for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword_only = [p.name for p in sig.parameters.values() if p.kind == p.KEYWORD_ONLY]

    @functools.wraps(init)
    def wrapper(*args, **kwargs):
        extra = len(args) - len(positional)
        if extra <= 0:
            return init(*args, **kwargs)
        if extra > len(keyword_only):
            raise TypeError(f"{init.__qualname__}() takes at most "
                            f"{len(positional) + len(keyword_only) - 1} positional arguments "
                            f"but {len(args) - 1} were given.")
        names = keyword_only[:extra]
        owner = init.__qualname__.rsplit(".", 1)[0]
        passed = ", ".join(f"{n}={a!r}" for n, a in zip(names, args[-extra:]))
        warnings.warn(f"Pass {passed} as keyword argument(s) to {owner}: positional "
                      f"hyperparameters are deprecated and will be an error in the next "
                      f"release.", FutureWarning, stacklevel=2)
        for n in names:
            if n in kwargs:
                raise TypeError(f"{init.__qualname__}() got multiple values for argument {n!r}")
        kwargs.update(zip(names, args[-extra:]))
        return init(*args[:-extra], **kwargs)

    return wrapper
