"""sparsekm: sparse and approximate kernel machines.

Kernel methods give their answers as expansions ``Psi = sum_i alpha_i Phi(x_i)``.
sparsekm makes them small and fast: pre-images, reduced sets, training-set
approximation, direct sparse learning and randomized kernels, all around one
object, :class:`~sparsekm.expansion.KernelExpansion`.
"""

from . import config  # noqa: E402
from ._version import __version__
from .compress import compress  # noqa: E402
from .expansion import KernelExpansion  # noqa: E402
from .kernels import RBF, InverseMultiquadric, Linear, Polynomial, Sigmoid  # noqa: E402
from .onnx_export import to_onnx  # noqa: E402  (imports onnx only when called)
from .persistence import FormatError, load, save  # noqa: E402

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
