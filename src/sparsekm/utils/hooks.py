"""Functions a higher layer lends to a lower one, so that imports go one way only.

``KernelExpansion.from_estimator`` (layer 2) and ``ExpansionClassifier.from_estimator``
convert scikit-learn estimators, which :mod:`sparsekm.interop` knows (a floor above). The
lower module declares a :class:`Hook`; interop registers its converter on it when it is
imported (``import sparsekm`` always imports it), so the lower layer calls up without
importing up (``docs/architecture.md``).
"""

from __future__ import annotations

__all__ = ["Hook"]


class Hook:
    """A named slot for one function that a higher layer provides.

    Parameters
    ----------
    name : str
        What the hook does (for messages).
    provider : str
        The module expected to register it (named in the error when none has).
    """

    def __init__(self, name, provider):
        self.name, self.provider, self._fn = name, provider, None

    def register(self, fn):
        """Make ``fn`` the hook's function; returns ``fn`` (usable as a decorator)."""
        if not callable(fn):
            raise TypeError(f"{self.name}: a hook takes a callable; got {type(fn).__name__}.")
        self._fn = fn
        return fn

    def __call__(self, *args, **kwargs):
        if self._fn is None:
            raise TypeError(f"{self.name}: no function registered; import {self.provider} "
                            "(import sparsekm does).")
        return self._fn(*args, **kwargs)
