"""The fused few-rows path of ExpansionClassifier: same numbers, same errors."""

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.svm import SVC

from sparsekm.multiclass import ExpansionClassifier, ovo_votes


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    return X[:300] / 16.0, y[:300], X[300:500] / 16.0


@pytest.mark.parametrize("kernel", ["rbf", "poly", "sigmoid", "linear"])
def test_one_row_equals_the_engine(data, kernel):
    X, y, Xt = data
    svc = SVC(kernel=kernel, gamma=0.05, coef0=0.5 if kernel != "rbf" else 0.0).fit(X, y)
    clf = ExpansionClassifier.from_estimator(svc)
    exp = clf.expansion
    for i in range(0, 200, 20):
        row = Xt[i:i + 1]
        fast = exp._decision_few_rows(row)
        assert fast is not None  # the fused path is taken
        np.testing.assert_array_equal(fast, exp.decision_function(row))
    labels = np.array([clf.predict(Xt[i:i + 1])[0] for i in range(200)])
    np.testing.assert_array_equal(labels, svc.predict(Xt))
    dec = np.vstack([clf.decision_function(Xt[i:i + 1]) for i in range(200)])
    np.testing.assert_allclose(dec, svc.decision_function(Xt), rtol=1e-10, atol=1e-10)


def test_fallbacks_keep_validation(data):
    X, y, Xt = data
    clf = ExpansionClassifier.from_estimator(SVC().fit(X, y))
    exp = clf.expansion
    assert exp._decision_few_rows(Xt[:17]) is None  # more rows: the engine
    assert exp._decision_few_rows(Xt[:1].astype(np.float32)) is None
    assert exp._decision_few_rows(Xt[:1, :10]) is None
    bad = Xt[:1].copy()
    bad[0, 3] = np.nan
    assert exp._decision_few_rows(bad) is None
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(bad)
    with pytest.raises(ValueError, match="features"):
        clf.predict(Xt[:1, :10])
    assert clf.predict(Xt[:1].tolist())[0] == clf.predict(Xt[:1])[0]


def test_ovo_votes_against_a_loop():
    rng = np.random.default_rng(0)
    k = 6
    dec = rng.standard_normal((50, 15))
    dec[0] = 0.0  # f = 0 votes for the second class
    ref = np.zeros((50, k))
    p = 0
    for i in range(k):
        for j in range(i + 1, k):
            ref[:, i] += dec[:, p] > 0
            ref[:, j] += dec[:, p] <= 0
            p += 1
    np.testing.assert_array_equal(ovo_votes(dec, k), ref)
    assert ovo_votes(dec, k)[0].tolist() == [0, 1, 2, 3, 4, 5]


def test_reduced_set_classifier_rows_keep_sklearn_checks(data):
    import pandas as pd

    from sparsekm.models import ReducedSetClassifier

    X, y, Xt = data
    svc = SVC(gamma=0.05).fit(X, y)
    rs = ReducedSetClassifier(svc, n_vectors=20, random_state=0).fit(X, y)
    batch = rs.decision_function(Xt[:40])  # 40 rows: the engine
    one = np.vstack([rs.decision_function(Xt[i:i + 1]) for i in range(40)])
    np.testing.assert_allclose(one, batch, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal([rs.predict(Xt[i:i + 1])[0] for i in range(40)],
                                  rs.predict(Xt[:40]))
    huge = Xt[:1] * 1e160  # finite, but its squared norm overflows: refused as before
    with pytest.raises(ValueError):
        rs.predict(huge)
    with pytest.raises(ValueError, match="features"):
        rs.predict(Xt[:1, :10])
    # fitted with feature names: a bare array still gets scikit-learn's warning
    cols = [f"p{i}" for i in range(64)]
    rs_df = ReducedSetClassifier(SVC(gamma=0.05).fit(pd.DataFrame(X, columns=cols), y),
                                 n_vectors=20, random_state=0).fit(pd.DataFrame(X, columns=cols), y)
    with pytest.warns(UserWarning, match="feature names"):
        rs_df.predict(Xt[:1])
