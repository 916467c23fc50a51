"""``sparsekm denoise``: linear PCA agrees with scikit-learn's PCA reconstruction, the
kernel width's two spellings are one kernel, kernel PCA pulls noisy points back towards
the clean curve (Mika et al.'s toy experiment, small), and bad inputs are refused."""

import numpy as np
import pytest
from sklearn.decomposition import PCA

from sparsekm.cli import main


@pytest.fixture
def circle(tmp_path):
    """Clean points on the unit circle (train) and noisy copies of others (input)."""
    rng = np.random.default_rng(5)
    t = rng.uniform(0, 2 * np.pi, size=120)
    X = np.column_stack([np.cos(t), np.sin(t)])
    s = rng.uniform(0, 2 * np.pi, size=15)
    N = np.column_stack([np.cos(s), np.sin(s)]) + rng.normal(scale=0.2, size=(15, 2))
    np.save(tmp_path / "train.npy", X)
    np.save(tmp_path / "input.npy", N)
    return tmp_path, X, N


def _denoise(d, out, *options):
    return main(["denoise", "--train", str(d / "train.npy"), "--input", str(d / "input.npy"),
                 "--output", str(d / out), *options])


def test_linear_baseline_is_the_pca_reconstruction(circle, capsys):
    d, X, N = circle
    assert _denoise(d, "lin.npy", "--n-components", "1", "--linear") == 0
    pca = PCA(n_components=1).fit(X)
    np.testing.assert_allclose(np.load(d / "lin.npy"), pca.inverse_transform(pca.transform(N)),
                               atol=1e-10)
    out = capsys.readouterr().out
    assert "denoised 15 points with linear PCA, 1 components, trained on 120 points" in out


def test_width_c_is_gamma_one_over_c(circle, capsys):
    d, _, _ = circle
    assert _denoise(d, "w.npy", "--n-components", "4", "--width", "4") == 0
    assert _denoise(d, "g.npy", "--n-components", "4", "--gamma", "0.25") == 0
    np.testing.assert_array_equal(np.load(d / "w.npy"), np.load(d / "g.npy"))
    assert "RBF(gamma=0.25)" in capsys.readouterr().out


def test_kernel_pca_moves_noisy_points_towards_the_circle(circle, capsys):
    d, _, N = circle
    assert _denoise(d, "k.csv", "--n-components", "6", "--width", "0.5") == 0
    Z = np.loadtxt(d / "k.csv", delimiter=",")
    before = np.abs(np.linalg.norm(N, axis=1) - 1).mean()
    after = np.abs(np.linalg.norm(Z, axis=1) - 1).mean()
    assert after < 0.6 * before, (before, after)


def test_gamma_and_width_together_are_a_usage_error(circle, capsys):
    d, _, _ = circle
    with pytest.raises(SystemExit) as exc:
        _denoise(d, "x.npy", "--n-components", "2", "--gamma", "1", "--width", "1")
    assert exc.value.code == 2
    assert "give one of them" in capsys.readouterr().err


def test_an_input_that_is_not_a_matrix_is_refused(circle, capsys):
    d, _, _ = circle
    np.save(d / "input.npy", np.zeros(4))
    assert _denoise(d, "x.npy", "--n-components", "2", "--linear") == 1
    err = capsys.readouterr().err
    assert "--input" in err and "must hold a 2-D array; got shape (4,)" in err


def test_the_output_is_never_the_input(circle, capsys):
    d, _, N = circle
    assert main(["denoise", "--train", str(d / "train.npy"), "--input", str(d / "input.npy"),
                 "--output", str(d / "input.npy"), "--n-components", "1", "--linear",
                 "--force"]) == 1
    assert "is the command's own input" in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(d / "input.npy"), N)


def test_an_existing_output_needs_force(circle, capsys):
    d, _, _ = circle
    (d / "o.npy").write_bytes(b"keep")
    assert _denoise(d, "o.npy", "--n-components", "1", "--linear") == 1
    assert "already exists; pass --force" in capsys.readouterr().err
    assert (d / "o.npy").read_bytes() == b"keep"
    assert _denoise(d, "o.npy", "--n-components", "1", "--linear", "--force") == 0
    assert np.load(d / "o.npy").shape == (15, 2)


def test_an_unknown_pre_image_method_is_named_with_the_choices(circle, capsys):
    d, _, _ = circle
    assert _denoise(d, "m.npy", "--n-components", "2", "--method", "magic") == 1
    err = capsys.readouterr().err
    assert "'method' parameter of KernelPCA.denoise must be one of" in err and "'magic'" in err
    assert not (d / "m.npy").exists()
