"""Progress bars (tqdm) that can be switched off globally (``--quiet``)."""

from __future__ import annotations

import os

from tqdm.auto import tqdm

__all__ = ["progress", "set_quiet"]

_QUIET = os.environ.get("SPARSEKM_QUIET", "") not in ("", "0")


def set_quiet(quiet=True):
    global _QUIET
    _QUIET = bool(quiet)


def progress(iterable=None, *, disable=None, **kwargs):
    """``tqdm`` with sparsekm's global quiet switch applied."""
    if disable is None:
        disable = _QUIET
    return tqdm(iterable, disable=disable, leave=False, **kwargs)
