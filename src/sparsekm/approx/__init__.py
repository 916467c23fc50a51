"""Approximations of the training set (greedy basis) and randomized kernels."""

from .greedy import GreedyBasis, greedy_basis, pivoted_cholesky

__all__: list[str] = ["GreedyBasis", "greedy_basis", "pivoted_cholesky"]
