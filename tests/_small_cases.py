"""Small, seeded inputs that several new test files share (not a test module)."""

import numpy as np

from sparsekm import KernelExpansion
from sparsekm.kernels import RBF


def rbf_expansion(seed=30, n_terms=14, n_features=3, gamma=0.6):
    """A single-output Gaussian-kernel expansion with random vectors and coefficients."""
    rng = np.random.default_rng(seed)
    return KernelExpansion(rng.normal(size=(n_terms, n_features)), rng.normal(size=n_terms),
                           RBF(gamma), 0.0)


def row_set(Z):
    """The rows of ``Z`` as a set (rounded to 12 decimals): selections compared as sets."""
    return {tuple(np.round(z, 12)) for z in np.asarray(Z)}


def noisy_xor(seed, n_train, n_test, noise):
    """``(X, y, Xt, yt)``: labels +-1 by the sign of x1 x2, training labels with noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train, 2))
    y = np.where(X[:, 0] * X[:, 1] + noise * rng.normal(size=n_train) > 0, 1.0, -1.0)
    Xt = rng.normal(size=(n_test, 2))
    yt = np.where(Xt[:, 0] * Xt[:, 1] > 0, 1.0, -1.0)
    return X, y, Xt, yt


def layout_bytes(precision, n_vectors, n_features=2, n_outputs=1, labels=("0", "1")):
    """The documented C layout: per vector ``n_features b`` (b = 4, 2, 1) plus
    ``4 n_outputs`` coefficients (int8: ``+ 4``, its scale); fixed: ``4 n_outputs``
    thresholds and the class labels (a 4-byte pointer each and the string with its NUL)."""
    b = {"float32": 4, "float16": 2, "int8": 1}[precision]
    per_vector = n_features * b + 4 * n_outputs + (4 if precision == "int8" else 0)
    fixed = 4 * n_outputs + sum(4 + len(s) + 1 for s in labels)
    return fixed + per_vector * n_vectors
