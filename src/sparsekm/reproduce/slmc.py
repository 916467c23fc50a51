"""Deprecated alias of :mod:`sparsekm.reproduce.wu2006` (the reproduction of Wu, Schölkopf
& Bakır 2006, named after that paper).

``import sparsekm.reproduce.slmc`` keeps working for one release and emits a
:class:`DeprecationWarning`; every name of :mod:`sparsekm.reproduce.wu2006` is reached
through it. :func:`sparsekm.reproduce.discover` does not import it.
"""

import warnings

from . import wu2006  # noqa: F401  (registers its reproductions, as before)


def __getattr__(name):
    return getattr(wu2006, name)


warnings.warn("sparsekm.reproduce.slmc is deprecated; import sparsekm.reproduce.wu2006 "
              "instead.", DeprecationWarning, stacklevel=2)
