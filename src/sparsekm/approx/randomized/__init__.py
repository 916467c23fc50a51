"""Randomized kernels: Gram sparsification and quantization, randomized rounding, projections.

Implements Achlioptas, McSherry & Schölkopf, *Sampling techniques for kernel
methods* (NIPS 2001). Every technique replaces exact kernel evaluations by
unbiased random ones, ``E[k_hat] = k``. One module per topic of the paper:

* :mod:`~sparsekm.approx.randomized.sampling` (section 3): :func:`sparsify_gram`
  keeps each entry of ``K`` (symmetrically) with probability ``1/s`` and scales it
  by ``s``, evaluating the kernel *only* at the kept entries and returning a
  ``scipy.sparse`` matrix; :func:`sparsify_quantize_gram` also quantizes them.
* :mod:`~sparsekm.approx.randomized.quantization` (section 3): :func:`quantize_gram`
  rounds every entry to ``+-b`` (``b = max|K_ij|``) with ``P(+b) = 1/2 + K_ij / (2b)``
  and stores one bit per entry (:class:`QuantizedGram`).
* :mod:`~sparsekm.approx.randomized.error_bounds` (Theorems 1-3): the error
  ``E_K = K_hat - K`` is measured by :func:`gram_error_norm` and bounded by the
  Füredi–Komlós bound ``4 sigma sqrt(m)`` (Theorem 1, :func:`furedi_komlos_bound`
  with the realised ``sigma`` from :func:`error_sigma`); :func:`subspace_distance`
  and :func:`theorem2_bound` check Theorem 2.
* :mod:`~sparsekm.approx.randomized.eigensolver` (section 2):
  :func:`orthogonal_iteration` and :class:`ThreadedCSROperator`, used by
  :class:`sparsekm.models.RandomizedKernelPCA`.
* :mod:`~sparsekm.approx.randomized.rounding` (section 4): randomized rounding of
  expansions, :func:`randomized_rounding`, and the choice of ``s`` from Theorem 5,
  :func:`theorem5_s`.
* Random projections (section 5): :class:`RandomProjection` with
  ``P_ij = +-1/sqrt(s)`` and ``s`` from Theorem 6 (:func:`theorem6_s`), and
  :class:`ProjectedKernel`, which evaluates any radial or dot-product kernel on the
  projected points and works wherever a :class:`~sparsekm.kernels.Kernel` does.
  They are defined in :mod:`sparsekm.kernels` (so that loading a saved
  ``ProjectedKernel`` needs no ``sparsekm.approx``) and re-exported here.
"""

from ...kernels import ProjectedKernel, RandomProjection, theorem6_s
from ._common import _as_generator
from .eigensolver import ThreadedCSROperator, orthogonal_iteration
from .error_bounds import (
    FurediKomlos,
    davis_kahan_residual_bound,
    error_sigma,
    estimate_error_norm,
    furedi_komlos_bound,
    gram_error_norm,
    subspace_distance,
    theorem2_bound,
    theorem2_bound_inexact,
    theorem3_c,
)
from .quantization import QuantizedGram, quantize_gram
from .rounding import randomized_rounding, theorem5_bounds, theorem5_s
from .sampling import sparsify_gram, sparsify_quantize_gram

__all__ = [
    "sparsify_gram",
    "quantize_gram",
    "sparsify_quantize_gram",
    "QuantizedGram",
    "gram_error_norm",
    "error_sigma",
    "furedi_komlos_bound",
    "FurediKomlos",
    "subspace_distance",
    "theorem2_bound",
    "theorem3_c",
    "estimate_error_norm",
    "theorem2_bound_inexact",
    "davis_kahan_residual_bound",
    "orthogonal_iteration",
    "ThreadedCSROperator",
    "randomized_rounding",
    "theorem5_s",
    "theorem5_bounds",
    "theorem6_s",
    "RandomProjection",
    "ProjectedKernel",
]

# The tests import this helper from here.
_PRIVATE_REEXPORTS = (_as_generator,)
