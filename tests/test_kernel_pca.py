"""KernelPCA: agreement with scikit-learn, expansions, pre-images, persistence, errors."""

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.exceptions import NotFittedError

import sparsekm
from sparsekm import RBF, KernelExpansion, Polynomial, Sigmoid
from sparsekm.models import KernelPCA, linear_pca_denoise
from sparsekm.preimage import fixed_point


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(250, 4)), rng.normal(size=(15, 4))


@pytest.mark.parametrize("solver", ["dense", "arpack"])
def test_transform_matches_sklearn_up_to_sign(data, solver):
    X, Xt = data
    ours = KernelPCA(6, kernel=RBF(0.3), eigen_solver=solver, random_state=0).fit(X)
    ref = SklearnKernelPCA(6, kernel="rbf", gamma=0.3, eigen_solver=solver,
                           random_state=0).fit(X)
    a, b = ours.transform(Xt), ref.transform(Xt)
    signs = np.sign(np.sum(a * b, axis=0))
    np.testing.assert_allclose(a, b * signs, atol=1e-10)
    np.testing.assert_allclose(ours.eigenvalues_, ref.eigenvalues_, rtol=1e-10)


def test_randomized_solver_matches_dense(data):
    X, Xt = data
    dense = KernelPCA(5, kernel=RBF(0.3), eigen_solver="dense").fit(X)
    rand = KernelPCA(5, kernel=RBF(0.3), eigen_solver="randomized", random_state=0).fit(X)
    np.testing.assert_allclose(rand.eigenvalues_, dense.eigenvalues_, rtol=1e-6)
    a, b = rand.transform(Xt), dense.transform(Xt)
    np.testing.assert_allclose(np.abs(a), np.abs(b), atol=1e-4)


def test_normalisation_and_expansions(data):
    X, Xt = data
    kp = KernelPCA(8, kernel=RBF(0.3)).fit(X)
    V = kp.component_expansion()
    # Unit-norm axes (eq. 35) that are mutually orthogonal in feature space.
    np.testing.assert_allclose(V.inner(V), np.eye(8), atol=1e-10)
    # The expansion with intercept reproduces transform (eq. 36).
    np.testing.assert_allclose(kp.expansions_.decision_function(Xt), kp.transform(Xt),
                               atol=1e-12)
    np.testing.assert_allclose(kp.fit_transform(X), kp.transform(X), atol=1e-10)


def test_projection_expansion(data):
    X, Xt = data
    kp = KernelPCA(8, kernel=RBF(0.3)).fit(X)
    B = kp.transform(Xt)
    P = kp.projection_expansion(Xt)
    mean = KernelExpansion(X, np.full((X.shape[0], Xt.shape[0]), 1.0 / X.shape[0]), kp.kernel_)
    centred = P - mean
    # <V^k, P_n Phi~(x)> = beta_k and ||P_n Phi~(x)||^2 = sum_k beta_k^2 (orthonormal axes).
    np.testing.assert_allclose(kp.component_expansion().inner(centred), B.T, atol=1e-10)
    np.testing.assert_allclose(centred.norm2(), np.sum(B**2, axis=1), rtol=1e-8)
    # Fewer components: the first n features only.
    P3 = kp.projection_expansion(Xt, n_components=3) - mean
    np.testing.assert_allclose(P3.norm2(), np.sum(B[:, :3] ** 2, axis=1), rtol=1e-8)


def test_full_rank_projection_of_training_points_is_exact():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 3))
    kp = KernelPCA(kernel=RBF(0.5)).fit(X)
    assert kp.n_components_ == 29  # centring removes one dimension
    P = kp.projection_expansion(X[:5])
    phi = KernelExpansion(X[:5], np.eye(5), kp.kernel_)
    np.testing.assert_allclose(P.distance2(phi), 0.0, atol=1e-9)
    res = kp.denoise(X[:5])
    np.testing.assert_allclose(res.z, X[:5], atol=1e-6)
    np.testing.assert_allclose(kp.inverse_transform(kp.transform(X[:5])), X[:5], atol=1e-5)


def test_inverse_transform_exact_for_odd_polynomial():
    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(40, 2))
    kp = KernelPCA(kernel=Polynomial(3, 1.0)).fit(X)
    assert kp.n_components_ == 9  # (2 + 3 choose 3) - 1 after centring
    Z = kp.inverse_transform(kp.transform(X[:4]))
    np.testing.assert_allclose(Z, X[:4], atol=1e-7)
    Zg = kp.inverse_transform(kp.transform(X[:4]), method="gradient", z0=X[:4] + 0.05,
                              n_init=1)
    np.testing.assert_allclose(Zg, X[:4], atol=1e-5)


def test_denoise_batch_equals_loop(data):
    X, Xt = data
    kp = KernelPCA(10, kernel=RBF(0.3)).fit(X)
    batch = kp.denoise(Xt, n_components=4)
    for i in range(3):
        one = fixed_point(kp.projection_expansion(Xt[i:i + 1], 4).output(0), z0=Xt[i], n_init=1)
        np.testing.assert_allclose(batch.z[i], one.z, atol=1e-9)
        np.testing.assert_allclose(batch.rho[i], one.rho, atol=1e-12)


def test_denoising_recovers_cluster_centres():
    # Three tight clusters (toy example of section VI-A): denoising pulls noisy points
    # towards their centres, better than linear PCA does with the same n.
    rng = np.random.default_rng(0)
    centres = np.array([[-0.5, -0.1], [0.0, 0.7], [0.5, 0.1]])
    X = np.repeat(centres, 40, axis=0) + 0.1 * rng.normal(size=(120, 2))
    test_labels = np.repeat(np.arange(3), 5)
    Xt = centres[test_labels] + 0.1 * rng.normal(size=(15, 2))
    kp = KernelPCA(kernel=RBF(10.0)).fit(X)
    Z = kp.denoise(Xt, n_components=2).z
    err_kpca = np.mean(np.sum((Z - centres[test_labels]) ** 2, axis=1))
    err_noisy = np.mean(np.sum((Xt - centres[test_labels]) ** 2, axis=1))
    Zlin = linear_pca_denoise(X, Xt, 1)
    err_lin = np.mean(np.sum((Zlin - centres[test_labels]) ** 2, axis=1))
    assert err_kpca < 0.5 * err_noisy
    assert err_kpca < err_lin


def test_component_preimages(data):
    X, _ = data
    kp = KernelPCA(3, kernel=RBF(0.3), random_state=0).fit(X)
    res = kp.component_preimages()
    assert res.z.shape == (3, 4)
    # ||V^k|| = 1, so the best one-term approximation error lies in [0, 1).
    assert np.all(res.objective < 1.0) and np.all(res.objective >= 0.0)
    one = kp.component_preimages([1])
    np.testing.assert_allclose(one.objective[0], res.objective[1], rtol=1e-6, atol=1e-9)


def test_linear_pca_baseline_matches_sklearn(data):
    X, Xt = data
    ref = PCA(2).fit(X)
    np.testing.assert_allclose(linear_pca_denoise(X, Xt, 2),
                               ref.inverse_transform(ref.transform(Xt)), atol=1e-10)
    many = linear_pca_denoise(X, Xt, [1, 4])
    np.testing.assert_allclose(many[1], Xt, atol=1e-10)  # all 4 axes: identity


def test_save_load_round_trip(data, tmp_path):
    X, Xt = data
    kp = KernelPCA(5, kernel=RBF(0.3)).fit(X)
    path = tmp_path / "kpca.skm"
    sparsekm.save(kp, path)
    back = sparsekm.load(path)
    np.testing.assert_array_equal(back.eigenvectors_, kp.eigenvectors_)
    np.testing.assert_array_equal(back.expansions_.coef, kp.expansions_.coef)
    assert back.kernel_ == kp.kernel_ and back.get_params() == kp.get_params()
    np.testing.assert_allclose(back.transform(Xt), kp.transform(Xt), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(back.denoise(Xt[:2], 3).z, kp.denoise(Xt[:2], 3).z, atol=1e-10)


def test_errors(data):
    X, Xt = data
    with pytest.raises(NotFittedError):
        KernelPCA().transform(X)
    with pytest.raises(NotFittedError):
        KernelPCA().denoise(X)
    with pytest.raises(ValueError, match="positive semi-definite"):
        KernelPCA(kernel=Sigmoid()).fit(X)
    with pytest.raises(ValueError, match="'eigen_solver' parameter of KernelPCA"):
        KernelPCA(eigen_solver="lobpcg").fit(X)
    with pytest.raises(ValueError, match="'n_components' parameter of KernelPCA"):
        KernelPCA(n_components=0).fit(X)
    with pytest.raises(ValueError, match="at least 2 samples"):
        KernelPCA().fit(X[:1])
    with pytest.raises(ValueError, match="no component with a positive eigenvalue"):
        KernelPCA().fit(np.ones((5, 2)))
    kp = KernelPCA(4, kernel=RBF(0.3)).fit(X)
    with pytest.raises(ValueError, match="expecting at most 4 features"):
        kp.inverse_transform(np.zeros((2, 5)))
    with pytest.raises(ValueError, match="'n_components' parameter of KernelPCA projection"):
        kp.projection_expansion(Xt, n_components=5)
    with pytest.raises(ValueError, match="components must be"):
        kp.component_preimages([4])
    with pytest.raises(ValueError, match="'method' parameter of KernelPCA.denoise"):
        kp.denoise(Xt, method="newton")
    with pytest.raises(ValueError, match="X has 3 features"):
        kp.denoise(Xt[:, :3])
    with pytest.raises(ValueError, match="X has 3 features, but X_train has 4"):
        linear_pca_denoise(X, Xt[:, :3], 1)


def test_cli_denoise(tmp_path, capsys):
    from sparsekm.cli import main

    rng = np.random.default_rng(0)
    centres = np.array([[-0.5, -0.1], [0.0, 0.7], [0.5, 0.1]])
    X = np.repeat(centres, 30, axis=0) + 0.1 * rng.normal(size=(90, 2))
    N = centres[[0, 1, 2]] + 0.1 * rng.normal(size=(3, 2))
    np.save(tmp_path / "train.npy", X)
    np.savetxt(tmp_path / "noisy.csv", N, delimiter=",")
    out = tmp_path / "clean.npy"
    assert main(["denoise", "--train", str(tmp_path / "train.npy"), "--input",
                 str(tmp_path / "noisy.csv"), "--output", str(out), "--n-components", "2",
                 "--width", "0.1", "--quiet"]) == 0
    Z = np.load(out)
    ref = KernelPCA(2, kernel=RBF(10.0)).fit(X).denoise(N, tol=1e-6).z
    np.testing.assert_allclose(Z, ref, atol=1e-10)
    assert "denoised 3 points" in capsys.readouterr().out
    assert main(["denoise", "--train", str(tmp_path / "train.npy"), "--input",
                 str(tmp_path / "noisy.csv"), "--output", str(tmp_path / "lin.txt"),
                 "--n-components", "1", "--linear", "--quiet"]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "lin.txt", ndmin=2),
                               linear_pca_denoise(X, N, 1), atol=1e-12)


def test_uncentred_kernel_pca(data):
    X, Xt = data
    kp = KernelPCA(6, kernel=RBF(0.3), center=False).fit(X)
    K = kp.kernel_(X)
    w, V = np.linalg.eigh(K)
    np.testing.assert_allclose(kp.eigenvalues_, w[::-1][:6], rtol=1e-10)
    np.testing.assert_allclose(kp.transform(Xt), kp.kernel_(Xt, X) @ kp.eigenvectors_,
                               rtol=1e-12)
    np.testing.assert_allclose(kp.expansions_.decision_function(Xt), kp.transform(Xt),
                               atol=1e-12)
    V = kp.component_expansion()
    np.testing.assert_allclose(V.inner(V), np.eye(6), atol=1e-10)
    B = kp.transform(Xt)
    P = kp.projection_expansion(Xt, 4)
    expected = np.vstack([B[:, :4].T, np.zeros((2, len(Xt)))])  # orthogonal to V^5, V^6
    np.testing.assert_allclose(V.inner(P), expected, atol=1e-10)
    # Full rank: the projection of a training point is its own image.
    small = KernelPCA(kernel=RBF(0.5), center=False).fit(X[:20])
    phi = KernelExpansion(X[:3], np.eye(3), small.kernel_)
    np.testing.assert_allclose(small.projection_expansion(X[:3]).distance2(phi), 0.0, atol=1e-8)
    with pytest.raises(ValueError,
                       match="'center' parameter of KernelPCA must be an instance of 'bool'"):
        KernelPCA(center="yes").fit(X)
