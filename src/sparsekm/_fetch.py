"""Download the papers' data sets from their public sources (USPS, IDA, Ripley).

Re-exported by :mod:`sparsekm.datasets` as :func:`fetch_usps`, :func:`fetch_ida`,
:func:`fetch_ripley` and :func:`fetch_all`; the command line is
``sparsekm data fetch [usps|ida|ripley|all] [--data DIR]``.

Every file is downloaded with ``pooch`` (the optional extra ``sparsekm[data]``;
imported only when a fetcher runs) into a temporary folder, its SHA-256 checked
against :mod:`sparsekm._data_registry`, and only then moved into the data folder,
in the layout the loaders read::

    usps/zip.train.gz, usps/zip.test.gz
    ripley/synth.tr, ripley/synth.te
    ida/<name>/<name>_{train,test}_{data,labels}_<k>.asc.gz     (k = 1..10)

A download whose checksum differs is deleted and never reaches the data folder.
The checksum is taken over the file's content (after gunzip for gzipped files), so
a source that serves the IDA files uncompressed (``.asc``) is accepted and the
file is stored gzipped.

Data folder: the ``path`` argument, else ``$SPARSEKM_DATA``, else the user cache
folder ``pooch.os_cache("sparsekm")`` (e.g. ``~/.cache/sparsekm`` on Linux), which
the loaders also search.

Sources (tried in order; a failed or corrupt download moves on to the next):

* USPS: the *Elements of Statistical Learning* data page
  (https://hastie.su.domains/ElemStatLearn/datasets/zip.train.gz, ``zip.test.gz``),
  then the GitHub copy robintux/Datasets4StackOverFlowQuestions @ 57a571f9;
* IDA (splits 1-10): GitHub fernando2393/Relevance-Vector-Machine @ 4692830b
  (banana, breast_cancer, german, image, titanic, waveform) and
  povelfk/AdvML19-Project-RVM @ fe15c4dc (heart, ringnorm);
* Ripley: https://www.stats.ox.ac.uk/pub/PRNN/synth.tr (``synth.te``), then GitHub
  wcparham1/COSC522 @ 8f57a962.

``base_url=`` (or ``$SPARSEKM_DATA_URL``) replaces all of them by one mirror that
serves the layout above (``{base_url}/usps/zip.train.gz``, ...): a copy of a data
folder behind any web server.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ._data_registry import CONTENT_SHA256

__all__ = ["fetch_usps", "fetch_ida", "fetch_ripley", "fetch_all", "default_data_dir",
           "FETCH_HINT"]

#: The sentence every "data not found" message ends with.
FETCH_HINT = ("Download it with `sparsekm data fetch` (Python: sparsekm.datasets.fetch_usps / "
              "fetch_ida / fetch_ripley), or point --data / the SPARSEKM_DATA environment "
              "variable at a folder that holds it.")

#: Hosts of the upstream sources (tests point them at a loopback server).
HOSTS = {
    "github": "https://raw.githubusercontent.com",
    "esl": "https://hastie.su.domains/ElemStatLearn/datasets",
    "prnn": "https://www.stats.ox.ac.uk/pub/PRNN",
}

_IDA_NAMES = ("banana", "breast_cancer", "german", "heart", "image", "ringnorm", "titanic",
              "waveform")
_IDA_RAETSCH_RVM = "fernando2393/Relevance-Vector-Machine/4692830b"
_IDA_ADVML = "povelfk/AdvML19-Project-RVM/fe15c4dc66753005760c5286ec295f1c2afec61c"
_USPS_MIRROR = "robintux/Datasets4StackOverFlowQuestions/57a571f9"
_RIPLEY_MIRROR = "wcparham1/COSC522/8f57a9626ebe2d89af934c0b223a6d55614307a7"


def default_data_dir():
    """The user data folder the fetchers write to by default (``pooch.os_cache("sparsekm")``).

    ``None`` when ``platformdirs`` (a dependency of ``pooch``) is not installed.
    """
    try:
        import platformdirs
    except ImportError:
        return None
    return Path(platformdirs.user_cache_dir("sparsekm"))


def _upstream_urls(relpath):
    """Candidate upstream URLs of one file of the layout, best first."""
    parts = relpath.split("/")
    if parts[0] == "usps":
        return [f"{HOSTS['esl']}/{parts[1]}", f"{HOSTS['github']}/{_USPS_MIRROR}/{parts[1]}"]
    if parts[0] == "ripley":
        return [f"{HOSTS['prnn']}/{parts[1]}", f"{HOSTS['github']}/{_RIPLEY_MIRROR}/{parts[1]}"]
    name, fname = parts[1], parts[2][: -len(".gz")]  # upstream serves plain .asc
    if name in ("heart", "ringnorm"):
        return [f"{HOSTS['github']}/{_IDA_ADVML}/data/{name}/{fname}",
                f"{HOSTS['github']}/{_IDA_ADVML}/{name}/{fname}"]
    up = name.replace("_", "-")
    up_fname = fname.replace(name, up, 1)
    return [f"{HOSTS['github']}/{_IDA_RAETSCH_RVM}/Classification/datasets/{up}/{up_fname}"]


def _content_sha256(raw):
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    return hashlib.sha256(data).hexdigest(), data


def _file_ok(path, relpath):
    try:
        return _content_sha256(Path(path).read_bytes())[0] == CONTENT_SHA256[relpath]
    except (OSError, EOFError, gzip.BadGzipFile):
        return False


def _resolve_root(path):
    if path is not None:
        return Path(path).expanduser()
    env = os.environ.get("SPARSEKM_DATA")
    if env:
        return Path(env).expanduser()
    import pooch

    return Path(pooch.os_cache("sparsekm"))


def _require_pooch():
    try:
        import pooch
    except ImportError:
        from .utils._extras import install_hint

        raise ImportError("Downloading the data sets needs the optional dependency 'pooch': "
                          f"{install_hint('data')}, or pip install pooch.") from None
    return pooch


def _fetch_file(relpath, root, base_url, pooch, progressbar, timeout):
    """Download one file of the layout into ``root``; returns its path."""
    dest = root / relpath
    if dest.is_file() and _file_ok(dest, relpath):
        return dest
    urls = ([f"{base_url.rstrip('/')}/{relpath}"] if base_url else _upstream_urls(relpath))
    expected = CONTENT_SHA256[relpath]
    errors = []
    with tempfile.TemporaryDirectory(prefix="sparsekm-fetch-") as tmp:
        for i, url in enumerate(urls):
            try:
                got = pooch.retrieve(url, known_hash=None, fname=f"download{i}", path=tmp,
                                     progressbar=progressbar,
                                     downloader=pooch.HTTPDownloader(timeout=timeout))
            except Exception as exc:  # network, HTTP 404, ...: try the next source
                errors.append(f"{url}: {type(exc).__name__}: {exc}")
                continue
            raw = Path(got).read_bytes()
            try:
                sha, content = _content_sha256(raw)
            except (EOFError, gzip.BadGzipFile, OSError) as exc:
                sha, content = f"unreadable gzip ({exc})", None
            if sha != expected:
                errors.append(f"{url}: SHA-256 mismatch: expected {expected}, got {sha} "
                              "(download deleted, nothing cached)")
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = dest.with_name(dest.name + ".part")
            if relpath.endswith(".gz"):
                if raw[:2] == b"\x1f\x8b":
                    part.write_bytes(raw)
                else:  # store gzipped, byte-for-byte reproducibly (no name, mtime 0)
                    with open(part, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb",
                                                               filename="", mtime=0) as gz:
                        gz.write(content)
            else:
                shutil.copyfile(got, part)
            os.replace(part, dest)
            return dest
    if any("SHA-256 mismatch" in e for e in errors):
        raise ValueError(f"Refusing {relpath}: no source gave the expected content "
                         f"(SHA-256 {expected}).\n  " + "\n  ".join(errors))
    raise OSError(f"Could not download {relpath} from any source:\n  " + "\n  ".join(errors))


def _fetch(relpaths, path, base_url, progressbar, timeout):
    pooch = _require_pooch()
    root = _resolve_root(path)
    base_url = base_url if base_url is not None else os.environ.get("SPARSEKM_DATA_URL") or None
    logger = pooch.get_logger()
    level = logger.level
    # pooch would log "SHA256 hash of downloaded file ... use it as known_hash" for every
    # file: misleading here, where the content is verified against the registry below
    logger.setLevel("WARNING")
    try:
        for rel in relpaths:
            _fetch_file(rel, root, base_url, pooch, progressbar, timeout)
    finally:
        logger.setLevel(level)
    return root


def fetch_usps(path=None, *, base_url=None, progressbar=False, timeout=60):
    """Download USPS (``usps/zip.{train,test}.gz``) and verify its SHA-256.

    Parameters
    ----------
    path : str or Path, optional
        Data folder (default ``$SPARSEKM_DATA``, else ``pooch.os_cache("sparsekm")``).
    base_url : str, optional
        A mirror serving the data-folder layout (default ``$SPARSEKM_DATA_URL``, else
        the public sources listed in the module docstring).
    progressbar : bool, default=False
    timeout : float, default=60
        Seconds per HTTP request.

    Returns
    -------
    Path
        The data folder; ``load_usps(path=...)`` reads it (and the loaders find the
        default folder on their own).

    Raises
    ------
    ValueError
        A download's SHA-256 differs from the registry (it is deleted, not cached).
    OSError
        No source could be reached.
    """
    return _fetch(["usps/zip.train.gz", "usps/zip.test.gz"], path, base_url, progressbar,
                  timeout)


def fetch_ripley(path=None, *, base_url=None, progressbar=False, timeout=60):
    """Download Ripley's synthetic data (``ripley/synth.{tr,te}``); see :func:`fetch_usps`."""
    return _fetch(["ripley/synth.tr", "ripley/synth.te"], path, base_url, progressbar, timeout)


def fetch_ida(name=None, path=None, *, splits=range(1, 11), base_url=None, progressbar=False,
              timeout=60):
    """Download IDA benchmark splits (Rätsch) and verify them; see :func:`fetch_usps`.

    Parameters
    ----------
    name : str or sequence of str, optional
        One or more of ``sparsekm.datasets.IDA_DATASETS``; ``None`` fetches all eight.
    splits : iterable of int, default=range(1, 11)
        Splits to fetch (only 1-10 are published by the sources).
    """
    names = _IDA_NAMES if name is None else ([name] if isinstance(name, str) else list(name))
    for n in names:
        if n not in _IDA_NAMES:
            raise ValueError(f"Unknown IDA data set {n!r}; available: {list(_IDA_NAMES)}.")
    splits = list(splits)
    for k in splits:
        if not isinstance(k, int) or not 1 <= k <= 10:
            raise ValueError(f"splits must be ints in 1..10 (only splits 1-10 are available); "
                             f"got {k!r}.")
    rel = [f"ida/{n}/{n}_{part}_{kind}_{k}.asc.gz" for n in names for k in splits
           for part in ("train", "test") for kind in ("data", "labels")]
    return _fetch(rel, path, base_url, progressbar, timeout)


def fetch_all(path=None, *, base_url=None, progressbar=False, timeout=60):
    """:func:`fetch_usps`, :func:`fetch_ida` (all eight) and :func:`fetch_ripley`."""
    fetch_usps(path, base_url=base_url, progressbar=progressbar, timeout=timeout)
    fetch_ida(None, path, base_url=base_url, progressbar=progressbar, timeout=timeout)
    return fetch_ripley(path, base_url=base_url, progressbar=progressbar, timeout=timeout)
