"""``load``: open, check the container, verify, parse ``meta.json``, decode."""

from __future__ import annotations

import gc
import io
import json
import os
import warnings
import zipfile

from . import bounds
from .bounds import _META_ALLOWANCE, _META_COST_PER_BYTE, _META_COST_PER_TOKEN, ALLOCATION_FACTOR
from .decoder import _Decoder
from .format import (
    _FORMAT,
    _META,
    _SIGNATURE,
    SCHEMA_VERSION,
    FormatError,
    UnverifiedSignatureWarning,
    _check_key,
)
from .registry import _import_registries
from .zipreader import _Archive, _open_regular, _zip_directory


def load(path, *, key=None, require_key=False):
    """Load an object written by :func:`save`.

    Parameters
    ----------
    path : str or os.PathLike
    key : bytes or str, optional
        The key the file was saved with: the file is read once into memory, its
        HMAC-SHA256 tag is verified over the names, sizes and contents of all its
        members before anything is decoded, and what is decoded is that same buffer;
        a file without a tag or with a wrong one is refused.
    require_key : bool, default=False
        Refuse to load anything that is not verified with ``key``: without ``key``, a
        signed file and an unsigned file are both refused. When False, a signed file
        loaded without ``key`` loads with an :class:`UnverifiedSignatureWarning`.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    FormatError
        (a ``ValueError``) if the file is not a valid sparsekm file: not a regular file
        or not a ZIP archive, too many members, local headers that disagree with the
        ZIP directory, compressed or oversized members, truncated, wrong schema
        version, duplicate JSON keys, checksum mismatch, arrays that do not match
        their declaration, shapes over the allocation budget, unknown classes,
        constructor parameters outside the class's constraints, undeclared or
        inconsistent fitted attributes, or (with ``key``) a missing or wrong
        authentication tag; with ``require_key=True`` and no ``key``, any file.

    Warns
    -----
    UnverifiedSignatureWarning
        When the file carries an authentication tag but no ``key`` was given.
    """
    key = _check_key(key)
    path = os.fspath(path)
    fh, file_size = _open_regular(path)
    if key is not None:
        # Verify what you decode: the file's bytes are read once, into memory, and both
        # the HMAC check and the decoding read that buffer; a writer changing the file
        # after the check cannot change what is decoded (issue 38: 33 of 3,000 tampered
        # models were accepted with the key when the file was read twice).
        with fh:
            fh = io.BytesIO(_read_exactly(fh, file_size, path))
    with fh:
        directory = _zip_directory(fh, file_size, path)
        fh.seek(0)
        try:
            zf = zipfile.ZipFile(fh, "r")
        except Exception as exc:  # BadZipFile, EOFError, NotImplementedError (bad version), ...
            raise FormatError(f"{path} is not a sparsekm file (not a valid archive: {exc}).") \
                from None
        # The cyclic garbage collector would rescan the growing tree many times while
        # json.loads and the decoder build it (JSON trees hold no cycles): off meanwhile.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        with zf:
            try:
                return _load_archive(zf, path, file_size, key, require_key, fh, directory)
            except FormatError:
                raise
            except RecursionError:
                raise FormatError(f"{path}: object tree nested too deeply.") from None
            except Exception as exc:  # any other failure while rebuilding means bad content
                raise FormatError(f"{path}: invalid content ({type(exc).__name__}: {exc}).") \
                    from None
            finally:
                if gc_was_enabled:
                    gc.enable()


def _read_exactly(fh, size, path):
    """The file's ``size`` bytes (its size when opened), read into one buffer."""
    data = fh.read(size)
    if len(data) != size or fh.read(1):
        raise FormatError(f"{path} changed size while it was read ({size} bytes when opened); "
                          "load it again once it is no longer being written.")
    return data


def _no_duplicate_keys(pairs):
    """``object_pairs_hook`` for :func:`json.loads`: a repeated key is a format error."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                raise FormatError(f"duplicate JSON key {k[:40]!r} (a repeated key would "
                                  "silently override the first).")
            seen.add(k)
    return d


_META_KEYS = frozenset(("format", "schema_version", "object", "arrays"))
_META_OPTIONAL = frozenset(("sparsekm_version",))


def _parse_meta(archive, raw):
    cost = _META_COST_PER_TOKEN * sum(raw.count(c) for c in (b"[", b"{", b",", b":")) \
        + _META_COST_PER_BYTE * len(raw)
    limit = ALLOCATION_FACTOR * archive.file_size + _META_ALLOWANCE
    if cost > limit:
        archive.fail(f"{_META} would cost about {cost} bytes to parse (its brackets, commas "
                     f"and colons), over the limit of {limit} bytes for a {archive.file_size}-"
                     "byte file; files written by save keep their bulk in arrays.")
    archive.memory.charge(len(raw) + cost, f"{_META} and the estimated cost of parsing it")
    try:
        meta = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicate_keys)
    except RecursionError:
        raise
    except FormatError as exc:
        archive.fail(f"{_META}: {exc}")
    except Exception as exc:
        archive.fail(f"unreadable metadata ({exc}).")
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        archive.fail("not a sparsekm file (format tag missing).")
    version = meta.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        archive.fail(f"schema version {version!r}; this sparsekm reads version {SCHEMA_VERSION} "
                     "(an integer).")
    missing = sorted(_META_KEYS - set(meta))
    if missing:
        archive.fail(f"{_META} lacks {missing} (every sparsekm file has them).")
    unknown = sorted(set(meta) - _META_KEYS - _META_OPTIONAL)
    if unknown:
        archive.fail(f"{_META} has unknown key(s) {[str(k)[:40] for k in unknown[:5]]}.")
    return meta


def _load_archive(zf, path, file_size, key, require_key, fh=None, directory=None):
    archive = _Archive(zf, path, file_size, fh, directory)
    if key is not None:
        archive.memory.charge(file_size, "the file, read into memory to verify it")
    signed = _SIGNATURE in archive.members
    if key is not None:
        archive.verify(key)
    elif require_key:
        archive.fail("this file is signed; give its key (key=..., CLI --key-file) to verify "
                     "it: require_key=True refuses unverified loads." if signed else
                     "this file is not signed (no authentication tag) and require_key=True "
                     "refuses unverified loads.")
    elif signed:
        warnings.warn(f"{path} carries an HMAC-SHA256 tag that was not checked because no key "
                      "was given; pass key= (CLI --key-file) to verify it, or "
                      "require_key=True (CLI --require-key) to refuse unverified files.",
                      UnverifiedSignatureWarning, stacklevel=4)
    raw = archive.read_small(_META, min(bounds._MAX_META_BYTES, file_size))
    meta = _parse_meta(archive, raw)
    specs = archive.check_specs(meta["arrays"])
    _import_registries()
    return _Decoder(archive, specs).decode(meta["object"])
