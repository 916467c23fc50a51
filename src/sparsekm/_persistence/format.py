"""The file format's names, its errors and the signature's tag (HMAC-SHA256)."""

from __future__ import annotations

import hashlib
import hmac
import re

SCHEMA_VERSION = 1
_FORMAT = "sparsekm"
_META = "meta.json"
_SIGNATURE = "signature.json"
_HMAC_CONTEXT = b"sparsekm-hmac-sha256-v1\n"
_ARRAY_MEMBER = re.compile(r"arrays/(a[0-9]{1,9})\.npy")
_DTYPE_KINDS = "biufcUS"  # bool, ints, floats, complex, fixed-width unicode / bytes


class FormatError(ValueError):
    """A file is not a valid sparsekm file (corrupt, truncated, tampered or unsupported)."""


class UnverifiedSignatureWarning(UserWarning):
    """A signed file was loaded without a key: its HMAC tag was not checked.

    Pass ``key=`` to verify it, or ``require_key=True`` (CLI ``--require-key``) to refuse
    such loads; ``warnings.simplefilter("error", UnverifiedSignatureWarning)`` turns the
    warning into an exception.
    """



def _check_key(key):
    if key is None:
        return None
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"key must be bytes (or str); got {type(key).__name__}.")
    key = bytes(key)
    if not key:
        raise ValueError("key must not be empty.")
    return key


def _manifest_tag(key, digests):
    """HMAC-SHA256 over ``(name, length, sha256)`` of every member, in name order."""
    mac = hmac.new(key, _HMAC_CONTEXT, hashlib.sha256)
    for name in sorted(digests):
        size, digest = digests[name]
        raw = name.encode("utf-8")
        mac.update(len(raw).to_bytes(8, "big") + raw + size.to_bytes(8, "big") + digest)
    return mac.hexdigest()

