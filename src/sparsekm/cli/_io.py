"""Shared I/O of the ``sparsekm`` commands: data rows in and out, refusals of inputs and
outputs that a command must not use, key files, and the model-loading policy."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path


class CLIError(Exception):
    """An error whose one-line message already says what to do (printed without a type)."""


def usage_error(msg):
    print(f"sparsekm: error: {msg}", file=sys.stderr)
    return 2


def index_like(column):
    """True when ``column`` holds 0, 1, 2, ... (a pandas RangeIndex written by to_csv)."""
    import numpy as np

    return column.size > 0 and np.array_equal(column, np.arange(column.size))


def _default_column_names(first, second, delimiter):
    """True when ``first`` is ``0, 1, ..., d-1`` (pandas' default column names, d >= 2)
    and ``second`` holds a value that is not a whole number, so ``first`` cannot be a
    data row of the same (integer) table."""
    names = [f.strip() for f in first.split(delimiter)]
    values = [f.strip() for f in second.split(delimiter)]
    if len(names) < 2 or names != [str(i) for i in range(len(names))]:
        return False
    return len(values) == len(names) and any(not v.lstrip("+-").isdigit() for v in values)


def check_input_file(path, what):
    """Refuse, before opening it, an input that is not a regular file.

    A FIFO (named pipe) or a device blocks ``open``/``read`` until a writer comes, so the
    command would hang; a folder or a missing file gets a message naming the option.
    """
    import stat

    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise CLIError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise CLIError(f"{what} {path}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        raise CLIError(f"{what} {path} is a folder; give a file")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else (
            "a socket" if stat.S_ISSOCK(st.st_mode) else "a device")
        raise CLIError(f"{what} {path} is {kind}, not a regular file: sparsekm reads "
                       "regular files only (it would wait for a writer); save the data to a "
                       "file and give its path")


#: first bytes of files that hold a model, not data rows: ZIP (a sparsekm file), a
#: pickle (protocol 2-5, e.g. joblib), ONNX has no magic (caught as "not text")
_MODEL_MAGICS = ((b"PK\x03\x04", "a ZIP archive (a sparsekm .skm model)"),
                 (b"PK\x05\x06", "a ZIP archive (a sparsekm .skm model)"))


def _binary_kind(head):
    """What the first bytes ``head`` of a data file say it is when it is not a table of
    numbers: a model (ZIP, pickle), other binary data, or None (text)."""
    for magic, kind in _MODEL_MAGICS:
        if head.startswith(magic):
            return kind
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:
        return "a pickle (e.g. a joblib-saved model)"
    if b"\x00" in head:
        return "binary data"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of head
            return "binary data (not UTF-8 text)"
    return None


def _refuse_binary_data(path, head, expected):
    kind = _binary_kind(head)
    if kind is None:
        return
    model = "model" in kind or "pickle" in kind or "ZIP" in kind
    raise CLIError(
        f"{path} looks like {'a model file' if model else 'a binary file'} ({kind}), not "
        f"{expected}: give data rows as .npy or .csv/.txt"
        + (" (sparsekm predict MODEL DATA: the model first, then the data)" if model else ""))


def read_matrix(path, index_col=False, *, note=None):
    """Read a 2-D float array from ``.npy`` or ``.csv``/``.txt`` (comma or whitespace).

    A first line that is not numeric is a header. A header whose first field is
    empty over a first column 0, 1, 2, ... is what ``pandas.DataFrame.to_csv()``
    writes with its index: that column is skipped, with a note (``note(text)``,
    default: one line on stderr). ``index_col=True`` always skips the first column.
    A first line of exactly ``0, 1, ..., d-1`` over rows that are not all whole
    numbers is the header ``to_csv(index=False)`` writes for pandas' default column
    names: it is skipped, with a note.
    """
    import numpy as np

    from ..utils.validation import check_array

    path = str(path)
    check_input_file(path, "data file")
    with open(path, "rb") as fh:
        head = fh.read(4096)
    pandas_index = False
    if path.endswith(".npy"):
        if not head.startswith(b"\x93NUMPY"):
            _refuse_binary_data(path, head, "a .npy array")
        try:
            X = np.load(path, allow_pickle=False)
        except Exception as exc:
            raise ValueError(f"could not read {path} as a .npy array: {exc}") from None
    else:
        _refuse_binary_data(path, head, "a CSV or text table of numbers")
        # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is dropped, so that the first
        # row is read as numbers, not taken for a header
        with open(path, encoding="utf-8-sig", errors="replace") as fh:
            first = fh.readline()
            second = fh.readline()
        delimiter = "," if "," in first else None
        try:
            float(first.replace(",", " ").split()[0])
            # an empty first field (",0,1,2": pandas' header over its index) is a header
            skip = int(delimiter == "," and first.split(",")[0].strip() == "")
        except (ValueError, IndexError):
            skip = 1  # a header line
        if not skip and _default_column_names(first, second, delimiter):
            skip = 1
            text = (f"{path}: the first line 0, 1, 2, ... is read as the column names "
                    "pandas writes (to_csv(index=False) of unnamed columns) and skipped")
            if note is None:
                print(f"sparsekm: note: {text}", file=sys.stderr)
            else:
                note(text)
        try:
            with warnings.catch_warnings():  # an empty file: numpy's warning is the error
                warnings.simplefilter("error", UserWarning)
                X = np.loadtxt(path, delimiter=delimiter, skiprows=skip, ndmin=2,
                               encoding="utf-8-sig")
        except UserWarning as exc:
            if "no data" not in str(exc):
                raise ValueError(f"could not read {path} as a numeric table: {exc}") from None
            X = np.empty((0, 1))  # refused below as empty, without numpy's warning
        except Exception as exc:
            raise ValueError(f"could not read {path} as a numeric table: {exc}") from None
        fields = first.rstrip("\r\n").split(",") if delimiter == "," else []
        pandas_index = (skip == 1 and len(fields) == X.shape[1] and X.shape[1] > 1
                        and fields[0].strip() == "" and all(f.strip() for f in fields[1:])
                        and index_like(X[:, 0]))  # pandas' to_csv(): an unnamed index
    if X.ndim == 2 and (index_col or pandas_index) and X.shape[1] > 1:
        if pandas_index and not index_col:
            text = (f"{path}: the first column has no name in the header and holds 0, 1, 2, "
                    "...: read as a pandas index (to_csv() writes it) and skipped; re-save "
                    "with to_csv(index=False, header=False) to avoid this note")
            if note is None:
                print(f"sparsekm: note: {text}", file=sys.stderr)
            else:
                note(text)
        X = X[:, 1:]
    return check_array(X, f"data in {path}")


#: the output formats of ``predict -o`` (and ``denoise --output``), by extension
OUTPUT_FORMATS = (".json", ".npy", ".csv", ".txt")


def check_output_path(path, option="-o"):
    """Refuse (usage error, exit 2) an output file whose extension names no known format."""
    suffix = Path(str(path)).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise SystemExit(usage_error(
            f"{option} {path}: unknown output format {suffix or '(no extension)'!r}; name the "
            f"file .json, .npy, .csv (comma-separated) or .txt (space-separated)"))


def write_matrix(path, Y):
    """Write ``Y`` in the format its extension names (see :data:`OUTPUT_FORMATS`).

    ``.json``: a list (one value per row) or a list of rows; ``.npy``: the array
    (labels that are not numbers as strings); ``.csv``: comma-separated;
    ``.txt``: space-separated; one row per input row.
    """
    import json

    import numpy as np

    suffix = Path(str(path)).suffix.lower()
    if suffix not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {suffix!r}; use one of {OUTPUT_FORMATS}")
    Y = np.asarray(Y)
    if suffix == ".npy":
        np.save(path, Y.astype(str) if Y.dtype.kind not in "biuf" else Y, allow_pickle=False)
    elif suffix == ".json":
        values = Y.tolist() if Y.dtype.kind in "biuf" else Y.astype(str).tolist()
        with open(path, "w") as fh:
            json.dump(values, fh)
            fh.write("\n")
    else:
        fmt = "%.17g" if Y.dtype.kind == "f" else "%s"
        np.savetxt(path, np.atleast_2d(Y.T).T if Y.ndim == 1 else Y,
                   delimiter="," if suffix == ".csv" else " ", fmt=fmt)


def _format_error_message(path, exc):
    """One line that says what a file refused by ``sparsekm.load`` is and what to do."""
    import zipfile

    text = str(exc)
    # (the format's words; a key, or a required one, was asked for)
    if "require_key=True" in text:
        if "not signed" in text:
            return (f"{path} is not signed, and --require-key accepts only files verified "
                    "with a key: sign it once with sparsekm.save(sparsekm.load(PATH), OUT, "
                    "key=KEY), or drop --require-key if you trust the file")
        return (f"{path} is signed, but --require-key was given without a key: pass "
                "--key-file KEYFILE to verify it")
    if "no authentication tag" in text:
        return (f"{path} is not signed (no authentication tag: it was saved without a key), "
                "so it cannot be verified: drop --key-file if you trust the file, or sign it "
                "once with sparsekm.save(sparsekm.load(PATH), OUT, key=KEY)")
    if "authentication failed" in text:
        return (f"{path}: its signature does not match the key in --key-file (a different "
                "key, or the file was modified after it was signed); nothing was loaded")
    if not zipfile.is_zipfile(path) and _looks_like_pickle(path):
        return (f"{path} is a pickle (e.g. saved with joblib), not a sparsekm file: convert "
                f"it once with 'sparsekm reduce {path} --trust-pickle -n N -o model.skm' "
                "(only for a file you trust) and use model.skm")
    if zipfile.is_zipfile(path) or path.endswith(".skm"):
        return f"{path} is corrupt: it is not a valid sparsekm file ({text})"
    return (f"{path} is not a sparsekm file (unknown format); give a file written by "
            "sparsekm.save or 'sparsekm reduce'")


def load_sparsekm_file(path, key=None, require_key=False):
    """``sparsekm.load`` with a one-line message for files that are not sparsekm files."""
    from ..persistence import FormatError, load

    path = str(path)
    check_input_file(path, "model file")
    try:
        return load(path, key=key, require_key=require_key)
    except FormatError as exc:
        raise CLIError(_format_error_message(path, exc)) from None


def read_key_file(path):
    """The HMAC key in ``path`` (its bytes, one trailing newline removed); None without a path."""
    if path is None:
        return None
    check_input_file(path, "--key-file")
    with open(path, "rb") as fh:
        key = fh.read((1 << 16) + 1)
    if len(key) > 1 << 16:
        raise ValueError(f"--key-file {path} is larger than 64 KiB; it should hold a short secret.")
    key = key[:-1] if key.endswith(b"\n") else key
    key = key[:-1] if key.endswith(b"\r") else key
    if not key:
        raise ValueError(f"--key-file {path} is empty.")
    return key


def _looks_like_pickle(path):
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
    except OSError:
        return False
    return len(head) == 2 and head[0] == 0x80 and 2 <= head[1] <= 5


def load_object(path, trust_pickle=False, key=None, require_key=False):
    """What ``path`` holds, as saved: a sparsekm file, or (only with ``trust_pickle``) a
    joblib pickle, with a one-line :class:`CLIError` for anything else. Returns
    ``(obj, source)``; ``source`` names what was loaded. With ``key`` a sparsekm file must
    carry a matching HMAC tag; a pickle (which cannot carry one) is loaded only with
    ``trust_pickle``, so that ``reduce --trust-pickle --key-file`` converts and signs in
    one step."""
    import zipfile

    from ..persistence import FormatError, load

    path = str(path)
    check_input_file(path, "model file")
    try:
        obj = load(path, key=key, require_key=require_key)
        return obj, f"sparsekm file ({type(obj).__name__})"
    except FormatError as exc:
        if require_key:  # nothing unverified: no pickle, no unsigned file
            raise CLIError(_format_error_message(path, exc)) from None
        if zipfile.is_zipfile(path) or path.endswith(".skm"):
            raise CLIError(_format_error_message(path, exc)) from None
        if not trust_pickle:
            if not _looks_like_pickle(path):
                raise CLIError(f"{path} is neither a sparsekm file nor a pickle "
                               "(unknown format); give a sparsekm file or a joblib-saved "
                               "scikit-learn model") from None
            raise CLIError(
                f"{path} is not a sparsekm file but a pickle. If it is a scikit-learn model "
                "saved with joblib and you trust its origin, pass --trust-pickle (unpickling "
                "can run arbitrary code)" + ("; the result is then signed with --key-file"
                                             if key is not None else "")
            ) from None
    import joblib

    print(f"sparsekm: warning: unpickling {path} (--trust-pickle); only do this for files "
          "you trust", file=sys.stderr)
    try:
        obj = joblib.load(path)
    except Exception as exc:
        # the unpickler's own message (e.g. "KeyError: 53") says nothing to a user;
        # --debug shows it
        raise CLIError(f"{path} could not be unpickled: it is neither a sparsekm file "
                       "nor a valid joblib/pickle file (corrupt or another format)") from exc
    return obj, f"joblib pickle ({type(obj).__name__})"


def load_model(path, trust_pickle=False, key=None, require_key=False):
    """Load a model: a sparsekm file, or (only with ``trust_pickle``) a joblib pickle.

    Returns ``(model, source)``: a classifier (:class:`~sparsekm.multiclass.ExpansionClassifier`,
    which keeps the classes and the multi-class rule) for ``SVC``/``NuSVC``/
    ``OneVsRestClassifier``/``OneVsOneClassifier`` models and sparsekm classifiers with an
    ``expansion_``, otherwise the :class:`~sparsekm.KernelExpansion` whose outputs are the
    model's predictions (SVR) or features (kernel PCA); ``source`` names what was loaded.
    Files are read by :func:`load_object` (keys and pickles as described there).
    """
    obj, source = load_object(path, trust_pickle, key, require_key)
    return reducible(obj, path), source


def reducible(obj, path):
    """``obj`` (as :func:`load_object` read it from ``path``) as what ``reduce`` shrinks:
    an :class:`~sparsekm.multiclass.ExpansionClassifier` or a
    :class:`~sparsekm.KernelExpansion` (:func:`sparsekm.convert.exact_model`, the
    conversion :func:`sparsekm.compress` uses too)."""
    from ..convert import exact_model

    try:
        return exact_model(obj, owner="reduce")
    except (TypeError, ValueError):
        raise CLIError(
            f"{path} holds a {type(obj).__module__.split('.')[0]} {type(obj).__name__}, "
            "which reduce cannot shrink: it reduces kernel expansions (sparsekm models with "
            "expansion_ or expansions_, KernelExpansion files, and scikit-learn's SVC, NuSVC, "
            "SVR, NuSVR, OneVsRestClassifier(SVC), OneVsOneClassifier(SVC) and "
            "sklearn.decomposition.KernelPCA)") from None


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name one file (the same path, a link, a hard link)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_save_target(path, force, inputs=(), option="-o"):
    """Refuse, before any work, an output the command must not write: a folder, a file in
    a missing folder, an existing file without ``--force`` (the same rule for ``reduce``,
    ``predict``, ``export`` and ``denoise``), and one of the command's own ``inputs``
    whatever ``--force`` says (the input would be gone if the command failed half-way,
    and ``reduce m.skm -o m.skm`` loses the full model)."""
    import stat

    target = Path(str(path))
    for src in inputs:
        if src is not None and os.path.exists(path) and _same_file(path, src):
            raise CLIError(f"{option} {path} is the command's own input ({src}); write the "
                           "result to another file (--force never replaces an input)")
    if target.is_dir():
        raise CLIError(f"{option} {path} is a folder; give a file name such as "
                       f"{target / ('model.skm' if option == '-o' else 'out.npy')}")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise CLIError(f"{option} {path}: the folder {parent} does not exist; create it "
                       f"first (mkdir -p {parent}) or write elsewhere")
    try:
        st = os.lstat(target)  # as sparsekm.save checks it: a symbolic link is replaced
    except OSError:
        return
    if force:
        return
    if stat.S_ISREG(st.st_mode) and not st.st_mode & 0o222:
        raise CLIError(f"{option} {path} is read-only (mode {stat.filemode(st.st_mode)}); "
                       "pass --force to replace it")
    raise CLIError(f"{option} {path} already exists; pass --force to replace it, or write "
                   "to another file")
