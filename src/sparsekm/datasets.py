"""Data sets: the embedded default and loaders for the papers' benchmark data.

The embedded default, :func:`load_digits_default`, is scikit-learn's bundled 8x8
digits and needs no files. The real data sets (USPS, the IDA benchmarks and
Ripley's synthetic data) are read from a data folder found, in this order, from

1. the ``path=`` argument,
2. the ``SPARSEKM_DATA`` environment variable (when set, the only folder searched),
3. ``../shared/data`` beside the source checkout, or beside the current directory,
4. the user data folder that :func:`fetch_usps`, :func:`fetch_ida` and
   :func:`fetch_ripley` (``sparsekm data fetch``) download into by default,
   ``pooch.os_cache("sparsekm")`` (e.g. ``~/.cache/sparsekm`` on Linux).

The fetchers download from the public sources, verify every file's SHA-256 and
write the layout below; they need the optional extra ``sparsekm[data]`` (pooch).

The folder layout and checksums are those of the project's ``shared/data/README.md``::

    usps/zip.train.gz, usps/zip.test.gz
    ripley/synth.tr, ripley/synth.te
    ida/<name>/<name>_{train,test}_{data,labels}_<k>.asc.gz
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path

import numpy as np

from ._data_registry import CONTENT_SHA256
from ._fetch import FETCH_HINT, default_data_dir, fetch_all, fetch_ida, fetch_ripley, fetch_usps

__all__ = [
    "fetch_usps",
    "fetch_ida",
    "fetch_ripley",
    "fetch_all",
    "default_data_dir",
    "load_digits_default",
    "load_usps",
    "load_usps_784",
    "load_usps_virtual",
    "shift_images",
    "zoom_images",
    "load_ida",
    "load_ripley",
    "find_data_dir",
    "data_available",
    "DataNotFoundError",
    "IDA_DATASETS",
    "IDA_SVM_PARAMS",
    "IDA_SVM_BASELINES",
]

#: IDA problems present in the data folder (splits 1-10 each).
IDA_DATASETS = ("banana", "breast_cancer", "german", "heart", "image", "ringnorm", "titanic",
                "waveform")

#: Rätsch's published SVM parameters (C, sigma) for k(x, y) = exp(-||x - y||^2 / sigma);
#: with scikit-learn use ``SVC(C=C, gamma=1/sigma)``.
IDA_SVM_PARAMS = {
    "banana": (316.2, 1.0),
    "breast_cancer": (15.19, 50.0),
    "german": (3.162, 55.0),
    "heart": (3.162, 120.0),
    "image": (500.0, 30.0),
    "ringnorm": (1e9, 10.0),
    "titanic": (1e5, 2.0),
    "waveform": (1.0, 20.0),
}

#: SVM baselines measured on splits 1-10 with these parameters: (test error %, mean #SV).
IDA_SVM_BASELINES = {
    "banana": (11.82, 86.7),
    "breast_cancer": (28.57, 113.0),
    "german": (22.50, 408.3),
    "heart": (17.10, 80.9),
    "image": (2.81, 172.1),
    "ringnorm": (1.63, 149.3),
    "titanic": (22.10, 69.9),
    "waveform": (9.93, 158.9),
}

_IDA_SHAPES = {  # name: (n_features, n_train, n_test)
    "banana": (2, 400, 4900),
    "breast_cancer": (9, 200, 77),
    "german": (20, 700, 300),
    "heart": (13, 170, 100),
    "image": (18, 1300, 1010),
    "ringnorm": (20, 400, 7000),
    "titanic": (3, 150, 2051),
    "waveform": (21, 400, 4600),
}

_USPS_SHA256 = {
    "zip.train.gz": "66ebf231ab51f2cf6ac1a892d0f98ccffee1079d7a5db638c1f11f366046ca16",
    "zip.test.gz": "8dacc3c6e136af6c3488de9e5113a7daf140c8c2f1f0b61c54ee02f03f1a962f",
}


class DataNotFoundError(FileNotFoundError):
    """A data file is missing; the message names the file and how to point at it."""


def _candidate_dirs():
    env = os.environ.get("SPARSEKM_DATA")
    if env:  # an explicit folder is the only one searched
        yield Path(env).expanduser()
        return
    here = Path(__file__).resolve()
    # src/sparsekm/datasets.py -> checkout root is parents[2]; shared/ sits beside it.
    if len(here.parents) > 3:
        yield here.parents[3] / "shared" / "data"
    yield Path.cwd().parent / "shared" / "data"
    yield Path.cwd() / "shared" / "data"
    user = default_data_dir()
    if user is not None:
        yield user


def find_data_dir(path=None):
    """The data folder to use, or ``None`` if none is found (see module docstring)."""
    if path is not None:
        return Path(path).expanduser()
    for cand in _candidate_dirs():
        if cand.is_dir():
            return cand
    return None


def data_available(name="usps", path=None):
    """True when the files of data set ``name`` ("usps", "ripley", "ida") are present."""
    probe = {"usps": "usps/zip.train.gz", "ripley": "ripley/synth.tr",
             "ida": "ida/banana/banana_train_data_1.asc.gz"}[name]
    roots = [Path(path).expanduser()] if path is not None else list(_candidate_dirs())
    return any((root / probe).is_file() for root in roots)


def _require(relpath, path):
    if path is None:  # the first candidate folder that holds the file
        for cand in _candidate_dirs():
            if (cand / relpath).is_file():
                return cand / relpath
    root = find_data_dir(path)
    where = root if root is not None else Path(os.environ.get("SPARSEKM_DATA", "../shared/data"))
    f = where / relpath
    if not f.is_file():
        raise DataNotFoundError(
            f"Data file not found: {f}. {FETCH_HINT} The layout is described in "
            "sparsekm.datasets (usps/, ripley/, ida/); Python loaders take path=... too."
        )
    return f


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _content_ok(f, fname):
    """The gunzipped content matches (a re-compressed copy of the published file)."""
    import gzip

    try:
        with gzip.open(f, "rb") as fh:
            data = fh.read()
    except (OSError, EOFError):
        return False
    return hashlib.sha256(data).hexdigest() == CONTENT_SHA256[f"usps/{fname}"]


def _loadtxt(f, **kw):
    try:
        return np.loadtxt(f, **kw)
    except Exception as exc:
        raise ValueError(f"Could not parse data file {f}: {exc}") from None


def load_digits_default(test_size=0.3, random_state=0):
    """scikit-learn's bundled 8x8 digits, scaled to [-1, 1]: the embedded default data.

    Parameters
    ----------
    test_size : float, default=0.3
        Fraction held out as the test set (stratified).
    random_state : int, default=0
        Seed of the split.

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarrays
        Images as rows of 64 values in [-1, 1] (as the USPS files are), labels 0-9.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    X = data.data / 8.0 - 1.0  # pixel values 0..16 -> [-1, 1]
    y = data.target
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=test_size, stratify=y,
                                              random_state=random_state)
    return X_tr, y_tr, X_te, y_te


@functools.lru_cache(maxsize=4)
def _usps_cached(root, verify):
    out = []
    for fname, n in (("zip.train.gz", 7291), ("zip.test.gz", 2007)):
        f = _require(f"usps/{fname}", root)
        if verify and _sha256(f) != _USPS_SHA256[fname] and not _content_ok(f, fname):
            raise ValueError(f"{f} does not have the expected SHA-256 checksum; the file differs "
                             "from the published USPS data.")
        arr = _loadtxt(f)
        if arr.shape != (n, 257):
            raise ValueError(f"{f} should hold {n} rows of 257 values; found shape {arr.shape}.")
        out += [arr[:, 1:].copy(), arr[:, 0].astype(np.int64)]
    return tuple(out)


def load_usps(path=None, verify=True):
    """USPS handwritten digits: 7291 training and 2007 test images of 16x16 pixels.

    Returns
    -------
    X_train : ndarray of shape (7291, 256), values in [-1, 1]
    y_train : ndarray of shape (7291,), labels 0-9
    X_test : ndarray of shape (2007, 256)
    y_test : ndarray of shape (2007,)
    """
    if path is None:
        path = next((c for c in _candidate_dirs() if (c / "usps" / "zip.train.gz").is_file()),
                    None)
    root = str(find_data_dir(path)) if find_data_dir(path) is not None else None
    arrays = _usps_cached(root, verify)
    return tuple(a.copy() for a in arrays)


def zoom_images(X, side_in, side_out, *, order=1):
    """Resample square images, one flattened image per row, by spline interpolation.

    ``order=1`` is bilinear (:func:`scipy.ndimage.zoom`); the corners of the input
    and output grids coincide.

    Parameters
    ----------
    X : array-like of shape (n_samples, side_in**2)
    side_in, side_out : int
        Image side before and after.
    order : int, default=1
        Spline order.

    Returns
    -------
    ndarray of shape (n_samples, side_out**2)
    """
    from scipy import ndimage

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != side_in * side_in:
        raise ValueError(f"X must have shape (n_samples, {side_in * side_in}) for {side_in}x"
                         f"{side_in} images; got {X.shape}.")
    if side_out < 1:
        raise ValueError(f"side_out must be >= 1; got {side_out}.")
    imgs = X.reshape(-1, side_in, side_in)
    f = side_out / side_in
    out = ndimage.zoom(imgs, (1.0, f, f), order=order, mode="nearest", grid_mode=False)
    return np.ascontiguousarray(out.reshape(X.shape[0], side_out * side_out))


def load_usps_784(path=None, verify=True):
    """USPS upsampled to 28x28 = 784 pixels (bilinear): a high-dimensional digit set.

    The images of :func:`load_usps` resampled by :func:`zoom_images` (values stay in
    [-1, 1]). Squared distances between images grow by a factor of about 2.5 (median
    2.54, 10-90 % range 2.3-2.7), so the USPS kernel width ``gamma = 1/128``
    corresponds to about ``gamma = 1/320`` here.

    Returns
    -------
    X_train : ndarray of shape (7291, 784)
    y_train : ndarray of shape (7291,)
    X_test : ndarray of shape (2007, 784)
    y_test : ndarray of shape (2007,)
    """
    Xtr, ytr, Xte, yte = load_usps(path, verify)
    return zoom_images(Xtr, 16, 28), ytr, zoom_images(Xte, 16, 28), yte


#: The 8 one-pixel translations (rows, columns) of the virtual examples, in this order.
SHIFTS_8 = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))


def shift_images(X, side, shifts=SHIFTS_8, *, fill=-1.0):
    """Translated copies of square images (virtual examples; Schölkopf, Burges & Vapnik 1996).

    Parameters
    ----------
    X : array-like of shape (n_samples, side**2)
        One flattened (row-major) image per row.
    side : int
        Image side.
    shifts : sequence of (int, int), default=SHIFTS_8
        ``(d_row, d_col)`` translations; ``(1, 0)`` moves the content one pixel down,
        ``(0, 1)`` one pixel right. The default is the 8 one-pixel neighbours.
    fill : float, default=-1.0
        Value of the pixels that enter at the border (USPS background is -1).

    Returns
    -------
    ndarray of shape (len(shifts) * n_samples, side**2)
        Block ``k`` (rows ``k n .. (k + 1) n - 1``) is ``X`` translated by ``shifts[k]``.
    """
    import numbers

    if not isinstance(side, numbers.Integral) or isinstance(side, bool) or side < 1:
        raise ValueError(f"side must be an int >= 1 (the image side); got {side!r}.")
    side = int(side)
    try:
        shifts = [tuple(s) for s in shifts]
    except TypeError:
        raise ValueError("shifts must be a sequence of (d_row, d_col) pairs, e.g. "
                         f"[(1, 0)]; got {shifts!r}.") from None
    for s in shifts:
        if len(s) != 2 or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                  for v in s):
            raise ValueError(f"every shift must be a pair of ints (d_row, d_col); got {s!r}.")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != side * side:
        raise ValueError(f"X must have shape (n_samples, {side * side}) for {side}x{side} "
                         f"images; got {X.shape}.")
    imgs = X.reshape(-1, side, side)
    out = np.full((len(shifts),) + imgs.shape, fill, dtype=np.float64)
    for k, (dr, dc) in enumerate(shifts):
        if abs(dr) >= side or abs(dc) >= side:
            raise ValueError(f"shift {(dr, dc)} moves a {side}x{side} image out of the frame.")
        src_r = slice(max(0, -dr), side - max(0, dr))
        dst_r = slice(max(0, dr), side - max(0, -dr))
        src_c = slice(max(0, -dc), side - max(0, dc))
        dst_c = slice(max(0, dc), side - max(0, -dc))
        out[k][:, dst_r, dst_c] = imgs[:, src_r, src_c]
    return out.reshape(len(shifts) * X.shape[0], side * side)


def load_usps_virtual(path=None, verify=True):
    """USPS with virtual examples: 65,619 training images, the same 2007 test images.

    The 7291 training digits of :func:`load_usps` followed by their 8 translations by one
    pixel (:func:`shift_images`, background ``-1`` entering at the border): Schölkopf's
    virtual examples, a large training set (9 x 7291 = 65,619) built from the USPS files.

    Returns
    -------
    X_train : ndarray of shape (65619, 256)
        Rows ``0..7290`` are the originals, then one block of 7291 per shift of
        :data:`SHIFTS_8`.
    y_train : ndarray of shape (65619,)
    X_test : ndarray of shape (2007, 256)
    y_test : ndarray of shape (2007,)
    """
    Xtr, ytr, Xte, yte = load_usps(path, verify)
    X = np.vstack([Xtr, shift_images(Xtr, 16)])
    return X, np.tile(ytr, 1 + len(SHIFTS_8)), Xte, yte


def load_ripley(path=None):
    """Ripley's synthetic two-class data: 250 training and 1000 test points in R^2.

    Returns
    -------
    X_train (250, 2), y_train (250,), X_test (1000, 2), y_test (1000,)
        Labels are 0/1 as in the files.
    """
    out = []
    for fname, n in (("synth.tr", 250), ("synth.te", 1000)):
        f = _require(f"ripley/{fname}", path)
        arr = _loadtxt(f, skiprows=1)
        if arr.shape != (n, 3):
            raise ValueError(f"{f} should hold {n} rows of 3 values; found shape {arr.shape}.")
        out += [arr[:, :2].copy(), arr[:, 2].astype(np.int64)]
    return tuple(out)


def load_ida(name, split=1, path=None):
    """One train/test split of an IDA benchmark problem (Rätsch's repository).

    Parameters
    ----------
    name : {"banana", "breast_cancer", "german", "heart", "image", "ringnorm", "titanic", "waveform"}
    split : int in 1..10
    path : str, optional
        Data folder (see module docstring).

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarrays
        Labels are -1/+1.
    """
    if name not in _IDA_SHAPES:
        raise ValueError(f"Unknown IDA data set {name!r}; available: {list(IDA_DATASETS)}.")
    if not isinstance(split, (int, np.integer)) or not 1 <= split <= 10:
        raise ValueError(f"split must be an int in 1..10 (only splits 1-10 are available); "
                         f"got {split!r}.")
    d, n_tr, n_te = _IDA_SHAPES[name]
    out = []
    for part, n in (("train", n_tr), ("test", n_te)):
        fx = _require(f"ida/{name}/{name}_{part}_data_{split}.asc.gz", path)
        fy = _require(f"ida/{name}/{name}_{part}_labels_{split}.asc.gz", path)
        X = _loadtxt(fx, ndmin=2)
        y = _loadtxt(fy, ndmin=1)
        if X.shape != (n, d) or y.shape != (n,):
            raise ValueError(f"{name} split {split} ({part}) should have X of shape {(n, d)} and "
                             f"y of shape ({n},); found {X.shape} and {y.shape}.")
        out += [X, y.astype(np.int64)]
    return tuple(out)
