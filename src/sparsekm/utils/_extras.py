"""The install hint for sparsekm's optional extras (one wording everywhere)."""

from __future__ import annotations

__all__ = ["install_hint"]


def install_hint(extra):
    """How to install the optional extra ``extra`` (e.g. ``"onnx"``), as one phrase.

    Names both the released package and a source checkout, where ``sparsekm[...]``
    would fetch the package from an index instead of installing the checkout.

    Examples
    --------
    >>> install_hint("onnx")
    "pip install 'sparsekm[onnx]' (from a source checkout: pip install '.[onnx]')"
    """
    return f"pip install 'sparsekm[{extra}]' (from a source checkout: pip install '.[{extra}]')"
