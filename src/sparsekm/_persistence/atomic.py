"""Atomic save: a locked temporary file in the target's directory, renamed over it."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import tempfile
import zipfile

import numpy as np

from .._version import __version__
from .bounds import _MAX_META_BYTES, ALLOCATION_FACTOR, PROJECTION_ALLOWANCE, _projection_bytes
from .encoder import _Encoder
from .format import _FORMAT, _META, _SIGNATURE, SCHEMA_VERSION, _check_key, _manifest_tag

_TMP_SUFFIX = ".skm-tmp"
#: The modification time of every ZIP member (the earliest a ZIP header holds, as
#: reproducible builds write): :mod:`zipfile` would stamp the clock's time, so two saves
#: of the same model would differ in those bytes. A file is a function of its model alone.
_ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)


def _member(name, external_attr=0):
    """A stored (uncompressed) ZIP member ``name`` with the fixed time ``_ZIP_DATE_TIME``."""
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE_TIME)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = external_attr
    return info


class _HashingWriter:
    def __init__(self, fh):
        self.fh, self.sha, self.size = fh, hashlib.sha256(), 0

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        return self.fh.write(data)


def _umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _tmp_pattern(base):
    return re.compile(re.escape(f".{base}.") + r"[A-Za-z0-9_]{1,64}" + re.escape(_TMP_SUFFIX))


def _remove_orphans(directory, base, own_tmp):
    """Remove temporary files that crashed saves to the same path left behind.

    Only names ``.<base>.<random>.skm-tmp`` (what :func:`save` creates), regular files
    owned by this user, not newer than this save's own temporary file and not locked:
    every save holds an exclusive ``flock`` on its temporary file until it is renamed,
    so a locked one belongs to a save still running (a dead process holds no lock).
    Returns the names removed.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks, leave them
        return []
    pattern, removed = _tmp_pattern(base), []
    try:
        own_mtime = os.stat(own_tmp).st_mtime_ns
        names = os.listdir(directory)
    except OSError:
        return removed
    for name in names:
        full = os.path.join(directory, name)
        if not pattern.fullmatch(name) or full == own_tmp:
            continue
        try:
            st = os.lstat(full)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() \
                    or st.st_mtime_ns > own_mtime:
                continue
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a save in progress
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(full)):
                os.unlink(full)
                removed.append(name)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


def _lock(fd):
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def _locked_tmp(directory, base, path):
    """A new temporary file ``.<base>.<random>.skm-tmp`` in ``directory``, created and locked.

    Between ``mkstemp`` and ``flock`` another save to the same path may take the fresh,
    still unlocked file for an orphan and remove it (issue 38: 4 of 160 concurrent saves
    failed with ``FileNotFoundError``). So, once locked, the name must still be this
    file; if not, a new one is made. Once locked and checked, no other save removes it.
    """
    for _ in range(16):
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=_TMP_SUFFIX, dir=directory)
        except OSError as exc:
            raise _save_error(exc, path) from exc
        try:
            _lock(fd)
            if os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                return fd, tmp
        except FileNotFoundError:
            pass  # removed as an orphan by a concurrent save before we locked it
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise OSError(errno.EAGAIN, f"cannot save to {path!r}: its temporary file was removed "
                                "16 times by concurrent saves; any previous file there is "
                                "left intact")


def _save_error(exc, path):
    """The same kind of OSError, naming the target path instead of the temporary file."""
    reason = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        reason = "no space left on device (free some space or save elsewhere)"
    # OSError(errno, message) becomes the matching subclass (PermissionError, ...)
    return OSError(exc.errno, f"cannot save to {path!r}: {reason}; any previous file there "
                              "is left intact")


def save(obj, path, *, key=None, force=False):
    """Save ``obj`` to ``path`` in sparsekm's safe format (see module docstring).

    The file is written to a new temporary file ``.<name>.<random>.skm-tmp`` in the same
    directory (created exclusively, never through a symlink, and locked while written),
    flushed to disk and then atomically moved to ``path``; if anything fails the
    temporary file is removed and any previous file at ``path`` is left untouched.
    Temporary files that earlier saves to the same path left behind when their process
    was killed are removed. Replacing a file keeps its permission bits.

    Parameters
    ----------
    obj : KernelExpansion, fitted sparsekm estimator, Pipeline, Kernel, array, or nested
        dict/list/tuple of these
    path : str or os.PathLike
        Destination file; ``.skm`` is the conventional suffix.
    key : bytes or str, optional
        Secret key: the file then carries an HMAC-SHA256 tag over the names, sizes and
        contents of its members, and ``load(path, key=key)`` refuses it if any of them
        was changed.
    force : bool, default=False
        Replace ``path`` even if it is read-only (no write permission bit); its mode is
        kept.

    Raises
    ------
    TypeError
        If ``obj`` holds something sparsekm files cannot store.
    ValueError
        If an estimator in ``obj`` is not fitted, or the file would hold random
        projections that :func:`load` refuses (over the projection budget).
    IsADirectoryError
        If ``path`` is a directory.
    PermissionError
        If ``path`` is read-only and ``force`` is False.
    OSError
        If writing fails (disk full, ...): the message names ``path``.
    """
    key = _check_key(key)
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path!r} is a directory; give a file name such as "
                                f"{os.path.join(path, 'model.skm')!r}.")
    try:
        old = os.lstat(path)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise _save_error(exc, path) from exc
    if old is not None and stat.S_ISREG(old.st_mode) and not old.st_mode & 0o222 and not force:
        raise PermissionError(errno.EACCES, f"cannot save to {path!r}: the file is read-only "
                              f"(mode {stat.filemode(old.st_mode)}); pass force=True (CLI "
                              "--force) to replace it")
    enc = _Encoder()
    tree = enc.encode(obj)
    meta = {"format": _FORMAT, "schema_version": SCHEMA_VERSION, "sparsekm_version": __version__,
            "object": tree, "arrays": {}}
    for name, arr in enc.arrays.items():
        fortran = not arr.flags.c_contiguous
        flat = (arr.T if fortran else arr).reshape(-1).view(np.uint8)  # the stored bytes
        meta["arrays"][name] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                                "sha256": hashlib.sha256(flat).hexdigest()}
        if fortran:
            meta["arrays"][name]["order"] = "F"
    meta_bytes = json.dumps(meta, sort_keys=True).encode("utf-8")
    if len(meta_bytes) > _MAX_META_BYTES:
        raise ValueError(f"Cannot save: the metadata would be {len(meta_bytes)} bytes (limit "
                         f"{_MAX_META_BYTES}); store large data as arrays.")
    directory = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    fd, tmp = _locked_tmp(directory, base, path)
    try:
        _remove_orphans(directory, base, tmp)
        try:
            with os.fdopen(os.dup(fd), "wb") as fh:
                with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                    digests = {_META: (len(meta_bytes), hashlib.sha256(meta_bytes).digest())}
                    zf.writestr(_member(_META, 0o600 << 16), meta_bytes)
                    for name, arr in enc.arrays.items():
                        member = f"arrays/{name}.npy"
                        with zf.open(_member(member), "w",
                                     force_zip64=arr.nbytes > 2**30) as out:
                            w = _HashingWriter(out)
                            np.lib.format.write_array(w, arr, allow_pickle=False)
                        digests[member] = (w.size, w.sha.digest())
                    if key is not None:
                        zf.writestr(_member(_SIGNATURE, 0o600 << 16), json.dumps(
                            {"algorithm": "HMAC-SHA256", "tag": _manifest_tag(key, digests)}))
                fh.flush()
                os.fsync(fh.fileno())
                size = fh.tell()
            mode = stat.S_IMODE(old.st_mode) & 0o777 if old is not None and \
                stat.S_ISREG(old.st_mode) else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError as exc:
            raise _save_error(exc, path) from exc
        # Everything save writes, load reads: the same projection budget, on the real size.
        need = _saved_projection_bytes(tree)
        budget = ALLOCATION_FACTOR * size + PROJECTION_ALLOWANCE
        if need > budget:
            raise ValueError(f"Cannot save to {path!r}: its random projections need about "
                             f"{need} bytes to rebuild, over the {budget} bytes load() allows "
                             f"for a {size}-byte file (PROJECTION_ALLOWANCE); use a smaller "
                             "projection (fewer dimensions s).")
        try:
            os.replace(tmp, path)
        except OSError as exc:
            raise _save_error(exc, path) from exc
    except BaseException:
        try:  # our own temporary file only (the name is still the file we locked)
            if os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        os.close(fd)
    try:  # make the rename durable; not possible everywhere (e.g. Windows)
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:  # pragma: no cover - platform dependent
        pass


def _raise_value_error(msg):
    raise ValueError(f"Cannot save: {msg}")


def _saved_projection_bytes(tree):
    """What :meth:`_Decoder.kernel` will count for ``tree``: distinct kernel specs only."""
    seen, total, stack = set(), 0, [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("__type__") == "kernel" and "spec" in node:
                ident = json.dumps(node["spec"], sort_keys=True)
                if ident not in seen:
                    seen.add(ident)
                    total += _projection_bytes(node["spec"], _raise_value_error)
                continue
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return total

