"""Shared fixtures and markers.

``requires_usps`` / ``requires_ida`` / ``requires_ripley`` skip a test when the
real data folder (``$SPARSEKM_DATA`` or ``../shared/data``) is absent; the
embedded digits never need files.
"""

import numpy as np
import pytest

from sparsekm.datasets import data_available

requires_usps = pytest.mark.skipif(not data_available("usps"), reason="USPS data not found")
requires_ida = pytest.mark.skipif(not data_available("ida"), reason="IDA data not found")
requires_ripley = pytest.mark.skipif(not data_available("ripley"), reason="Ripley data not found")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
