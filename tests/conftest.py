"""Shared fixtures and markers.

``requires_usps`` / ``requires_ida`` / ``requires_ripley`` skip a test when the
real data folder (``$SPARSEKM_DATA`` or ``../shared/data``) is absent; the
embedded digits never need files.
"""

import os

import numpy as np
import pytest
from hypothesis import settings

from sparsekm.datasets import data_available

# Deterministic property tests in the default run (CI must not flake); set
# SPARSEKM_HYPOTHESIS=explore to search new random examples locally.
settings.register_profile("default-run", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=1000)
settings.load_profile("explore" if os.environ.get("SPARSEKM_HYPOTHESIS") == "explore"
                      else "default-run")

requires_usps = pytest.mark.skipif(not data_available("usps"), reason="USPS data not found")
requires_ida = pytest.mark.skipif(not data_available("ida"), reason="IDA data not found")
requires_ripley = pytest.mark.skipif(not data_available("ripley"), reason="Ripley data not found")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
