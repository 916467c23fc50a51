"""Shared fixtures and markers.

``requires_usps`` / ``requires_ida`` / ``requires_ripley`` skip a test when the
real data folder (``$SPARSEKM_DATA`` or ``../shared/data``) is absent; the
embedded digits never need files.
"""

import inspect
import logging
import os

import numpy as np
import pytest
from hypothesis import settings
from sklearn.base import BaseEstimator

import sparsekm.approx
import sparsekm.models
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


def public_estimators():
    """Every estimator class exported by ``sparsekm.models`` and ``sparsekm.approx``."""
    out = []
    for module in (sparsekm.models, sparsekm.approx):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) and issubclass(obj, BaseEstimator) and obj not in out:
                out.append(obj)
    return out


@pytest.fixture(scope="session")
def _dask_session_client():
    """One real ``dask.distributed`` cluster (2 worker processes) for the whole run."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=logging.ERROR) as cluster:
        with distributed.Client(cluster) as client:
            yield client


@pytest.fixture
def dask_client(_dask_session_client):
    """The session's client, made the current one for this test, with both workers up.

    Tests elsewhere start, and SIGKILL workers of, clusters of their own in the same
    process (``test_dask_worker_loss.py``); the fits find their client through
    ``distributed.get_client()``, so each test names the shared one explicitly and waits
    until its two workers are there, whatever ran before it.
    """
    client = _dask_session_client
    with client.as_current():
        client.wait_for_workers(2, timeout=120)
        yield client


# -- the small fitted model the persistence format tests save, edit and load ---------------
@pytest.fixture(scope="module")
def data():
    """60 rows, 4 features, 3 classes (tests that need other data define their own)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(60, n_features=4, n_informative=3, n_redundant=0, n_classes=3,
                               random_state=0)
    return X, y


@pytest.fixture(scope="module")
def kfd(data):
    """A binary KernelFisherDiscriminant fitted on :func:`data`."""
    from sparsekm.kernels import RBF
    from sparsekm.models import KernelFisherDiscriminant

    X, y = data
    return KernelFisherDiscriminant(kernel=RBF(0.5)).fit(X, y == 1)
