"""sparsekm: sparse and approximate kernel machines.

Kernel methods give their answers as expansions ``Psi = sum_i alpha_i Phi(x_i)``.
sparsekm makes them small and fast: pre-images, reduced sets, training-set
approximation, direct sparse learning and randomized kernels, all around one
object, :class:`~sparsekm.expansion.KernelExpansion`.
"""

from . import config  # noqa: E402
from ._version import __version__
from .compression import compress  # noqa: E402
from .expansion import KernelExpansion  # noqa: E402
from .kernels import RBF, InverseMultiquadric, Linear, Polynomial, Sigmoid  # noqa: E402
from .onnx_export import to_onnx  # noqa: E402  (imports onnx only when called)
from .persistence import FormatError, load, save  # noqa: E402


def _install_compress_alias():
    """``sparsekm.compress`` is the function; its package is :mod:`sparsekm.compression`.

    The package was ``sparsekm/compress/`` before this release, shadowed by the function of the same
    name. For one release ``from sparsekm.compress import CompressReport`` (and
    ``import sparsekm.compress``) still work through a module object registered in
    :data:`sys.modules` alone -- no file, so importing it never replaces the function
    ``sparsekm.compress`` -- that forwards every name with a :class:`DeprecationWarning`.
    """
    import sys
    import types
    import warnings

    from . import compression

    class _Alias(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            warnings.warn("the module sparsekm.compress is now sparsekm.compression "
                          f"(sparsekm.compress is the function); import {name} from "
                          "sparsekm.compression.", DeprecationWarning, stacklevel=2)
            return getattr(compression, name)

    sys.modules.setdefault(__name__ + ".compress", _Alias(__name__ + ".compress"))


_install_compress_alias()

__all__ = [
    "KernelExpansion",
    "config",
    "RBF",
    "Polynomial",
    "Sigmoid",
    "InverseMultiquadric",
    "Linear",
    "save",
    "load",
    "FormatError",
    "to_onnx",
    "compress",
    "__version__",
]
