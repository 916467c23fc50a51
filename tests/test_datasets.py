import numpy as np
import pytest

from sparsekm import datasets
from sparsekm.datasets import (
    IDA_DATASETS,
    IDA_SVM_BASELINES,
    IDA_SVM_PARAMS,
    DataNotFoundError,
    load_digits_default,
    load_ida,
    load_ripley,
    load_usps,
)

from .conftest import requires_ida, requires_ripley, requires_usps


def test_digits_default_needs_no_files():
    X_tr, y_tr, X_te, y_te = load_digits_default()
    assert X_tr.shape[1] == X_te.shape[1] == 64
    assert X_tr.shape[0] + X_te.shape[0] == 1797
    assert X_tr.min() == -1.0 and X_tr.max() == 1.0
    assert set(np.unique(y_tr)) == set(range(10))


@requires_usps
def test_usps_shapes_and_range():
    X_tr, y_tr, X_te, y_te = load_usps()
    assert X_tr.shape == (7291, 256) and X_te.shape == (2007, 256)
    assert y_tr.shape == (7291,) and y_te.shape == (2007,)
    assert X_tr.min() >= -1.0 and X_tr.max() <= 1.0
    assert set(np.unique(y_te)) == set(range(10))
    X_tr[0, 0] = 99  # returned arrays are copies: the cache is not modified
    assert load_usps()[0][0, 0] != 99


@requires_ida
@pytest.mark.parametrize("name", IDA_DATASETS)
def test_ida_shapes_and_labels(name):
    X_tr, y_tr, X_te, y_te = load_ida(name, 1)
    assert X_tr.shape[1] == X_te.shape[1]
    assert set(np.unique(y_tr)) == {-1, 1}
    assert name in IDA_SVM_PARAMS and name in IDA_SVM_BASELINES


@requires_ripley
def test_ripley():
    X_tr, y_tr, X_te, y_te = load_ripley()
    assert X_tr.shape == (250, 2) and X_te.shape == (1000, 2)
    assert np.bincount(y_tr).tolist() == [125, 125]


def test_missing_data_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARSEKM_DATA", str(tmp_path))
    with pytest.raises(DataNotFoundError, match=r"usps/zip.train.gz.*SPARSEKM_DATA"):
        load_usps(path=tmp_path)
    with pytest.raises(DataNotFoundError, match="banana_train_data_3.asc.gz"):
        load_ida("banana", 3, path=tmp_path)
    with pytest.raises(DataNotFoundError, match="synth.tr"):
        load_ripley()  # found through the environment variable
    assert not datasets.data_available("usps", tmp_path)


def test_bad_arguments():
    with pytest.raises(ValueError, match="Unknown IDA data set 'diabetis'"):
        load_ida("diabetis", 1)
    with pytest.raises(ValueError, match="split must be an int in 1..10"):
        load_ida("banana", 11)


def test_corrupt_file_is_reported(tmp_path):
    (tmp_path / "ripley").mkdir()
    (tmp_path / "ripley" / "synth.tr").write_text("xs ys yc\n1 2\n")
    with pytest.raises(ValueError, match="synth.tr"):
        load_ripley(path=tmp_path)


def test_zoom_images_bilinear():
    from sparsekm.datasets import zoom_images

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(3, 16))
    np.testing.assert_allclose(zoom_images(X, 4, 4), X, atol=1e-12)  # identity
    Z = zoom_images(X, 4, 7)
    assert Z.shape == (3, 49)
    img, big = X[0].reshape(4, 4), Z[0].reshape(7, 7)
    # corners coincide; bilinear values stay within the input range
    np.testing.assert_allclose(big[[0, 0, -1, -1], [0, -1, 0, -1]], img[[0, 0, -1, -1], [0, -1, 0, -1]],
                               atol=1e-12)
    assert Z.min() >= X.min() - 1e-12 and Z.max() <= X.max() + 1e-12
    # a linear ramp is reproduced exactly: midpoint between pixels 0 and 1 at 1/2 (7 = 2*4 - 1)
    ramp = np.tile(np.arange(4.0), 4)[None, :]
    np.testing.assert_allclose(zoom_images(ramp, 4, 7).reshape(7, 7)[0], np.arange(7) / 2.0,
                               atol=1e-12)
    with pytest.raises(ValueError, match="shape"):
        zoom_images(X, 5, 7)
