"""Approximations of the training set (greedy basis) and randomized kernels."""

__all__: list[str] = []
