"""compress takes its validation rows in any array-like form, refuses a model it cannot
read with the forms it can, gives each binary machine its share of the budget when the
set is not shared, and keeps a latency budget by the cost it states per vector."""

import re

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from sparsekm import compress


@pytest.fixture(scope="module")
def moons():
    X, y = make_moons(160, noise=0.25, random_state=0)
    return X[:100], y[:100], X[100:], y[100:]


def _construct(model, Xv, yv, **kw):
    return compress(model, Xv, yv, method="construct", random_state=0, **kw)


def test_lists_and_data_frames_give_the_numpy_model(moons):
    pd = pytest.importorskip("pandas")
    Xtr, ytr, Xv, yv = moons
    svc = SVC(C=10, gamma=1.0).fit(Xtr, ytr)
    ref = _construct(svc, Xv, yv, n_vectors=6).decision_function(Xv)
    frame = _construct(svc, pd.DataFrame(Xv, columns=["a", "b"]), pd.Series(yv), n_vectors=6)
    lists = _construct(svc, Xv.tolist(), yv.tolist(), n_vectors=6)
    np.testing.assert_array_equal(frame.decision_function(Xv), ref)
    np.testing.assert_array_equal(lists.decision_function(Xv), ref)


def test_a_pipeline_is_refused_naming_what_compress_takes(moons):
    Xtr, ytr, Xv, yv = moons
    pipe = make_pipeline(StandardScaler(), SVC(C=10, gamma=1.0)).fit(Xtr, ytr)
    with pytest.raises(TypeError, match="compress cannot use a fitted Pipeline") as exc:
        _construct(pipe, Xv, yv, n_vectors=6)
    assert "a fitted SVC" in str(exc.value) and "KernelExpansion" in str(exc.value)


def test_separate_sets_give_each_binary_machine_its_share():
    X, y = make_blobs(150, centers=[[-4, 0], [4, 0], [0, 5]], cluster_std=0.7,
                      random_state=1)
    svc = SVC(C=10, gamma=0.5).fit(X[:90], y[:90])  # one-vs-one: 3 binary machines
    small = _construct(svc, X[90:], y[90:], n_vectors=6, shared=False)
    coef = np.asarray(small.expansion_.coef)
    assert coef.shape[1] == 3
    assert (coef != 0).sum(axis=0).tolist() == [2, 2, 2]  # 6 // 3 each
    assert small.n_vectors_ <= 6


def test_a_latency_budget_is_kept_by_the_stated_cost_per_vector(moons):
    Xtr, ytr, Xv, yv = moons
    svc = SVC(C=10, gamma=1.0).fit(Xtr, ytr)
    budget = 3.0
    report = _construct(svc, Xv, yv, max_latency_us=budget).compress_report_
    assert report["deploy_latency_target"] == "cost model"
    for line in report["deploy_conversion"]:
        fixed, per, n = map(float, re.search(
            r": ([0-9.]+) us \+ ([0-9.]+) us per vector .* n_vectors <= (\d+)", line).groups())
        assert fixed + per * n <= budget < fixed + per * (n + 1)
    n = report["deploy_n_vectors"]
    assert report["deploy_latency_us"] <= budget
    assert f"n_vectors <= {n}" in " ".join(report["deploy_conversion"])
