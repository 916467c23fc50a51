"""Random-state handling shared across layers (private)."""

from __future__ import annotations

import numbers

import numpy as np


def as_generator(random_state):
    """A ``numpy.random.Generator`` from None, an int, a Generator or a RandomState."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.integer)):
        if isinstance(random_state, bool):
            raise TypeError("random_state must be None, an int, a Generator or a RandomState.")
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise TypeError(
        f"random_state must be None, an int, a numpy Generator or RandomState; got "
        f"{type(random_state).__name__}."
    )

