"""The ZIP reader: the container's structure checked before and beside :mod:`zipfile`."""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import re
import stat
import struct
import zipfile

import numpy as np

from .bounds import (
    _CHUNK,
    _MAX_MEMBERS,
    _MAX_NDIM,
    ALLOCATION_FACTOR,
    ALLOCATION_SLACK,
    PROJECTION_ALLOWANCE,
    _Memory,
    _nominal_bytes,
)
from .format import _ARRAY_MEMBER, _DTYPE_KINDS, _META, _SIGNATURE, FormatError, _manifest_tag

_EOCD = struct.Struct("<4s4H2LH")         # end of central directory record (22 bytes)
_EOCD64_LOCATOR = struct.Struct("<4sLQL")   # ZIP64 end of central directory locator (20)
_EOCD64 = struct.Struct("<4sQ2H2L4Q")       # ZIP64 end of central directory record (56)
_CENTRAL = struct.Struct("<4s6H3L5H2L")     # central directory file header (46)
_LOCAL = struct.Struct("<4s5H3L2H")         # local file header (30)


def _zip_directory(fh, file_size, path):
    """``(n_entries, cd_offset, cd_size)`` from the archive's end records, checked.

    Read the way :mod:`zipfile` finds them, but before :mod:`zipfile` parses the
    directory (it builds one object per entry, whatever their number): the declared
    entry count and then the entries actually present in the directory are counted
    here, with nothing kept per entry, and more than ``_MAX_MEMBERS`` is refused.
    """
    def fail(msg):
        raise FormatError(f"{path}: {msg}")

    if file_size < _EOCD.size:
        fail("not a sparsekm file (too short to be a ZIP archive).")
    tail_len = min(file_size, _EOCD.size + 0xFFFF)
    fh.seek(file_size - tail_len)
    tail = fh.read(tail_len)
    if tail[-_EOCD.size:-_EOCD.size + 4] == b"PK\x05\x06" and tail[-2:] == b"\0\0":
        i = len(tail) - _EOCD.size
    else:  # zipfile then takes the last signature in the final 64 KiB (an archive comment)
        i = tail.rfind(b"PK\x05\x06")
        if i < 0 or i + _EOCD.size > len(tail):
            fail("not a sparsekm file (no ZIP end-of-directory record).")
    _, disk, cd_disk, n_disk, n_entries, cd_size, cd_offset, n_comment = \
        _EOCD.unpack_from(tail, i)
    if n_comment or i + _EOCD.size != len(tail):
        fail(f"{len(tail) - i - _EOCD.size} byte(s) after the ZIP end record (an archive "
             "comment or appended data); sparsekm files end with the end record.")
    eocd_pos = file_size - tail_len + i
    end_of_cd = eocd_pos
    if eocd_pos >= _EOCD64_LOCATOR.size + _EOCD64.size:
        fh.seek(eocd_pos - _EOCD64_LOCATOR.size)
        sig, disk64, at64, n_disks = _EOCD64_LOCATOR.unpack(fh.read(_EOCD64_LOCATOR.size))
        if sig == b"PK\x06\x07":  # zipfile then reads the ZIP64 record just before it
            if disk64 != 0 or n_disks > 1:
                fail("multi-disk ZIP archives are not sparsekm files.")
            fh.seek(eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size)
            rec = _EOCD64.unpack(fh.read(_EOCD64.size))
            if rec[0] == b"PK\x06\x06":
                if rec[1] != _EOCD64.size - 12 or \
                        at64 != eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size:
                    fail("the ZIP64 end record has an extensible data sector or is not where "
                         "its locator says; sparsekm files have neither.")
                disk, cd_disk, n_disk, n_entries, cd_size, cd_offset = rec[4:10]
                end_of_cd = eocd_pos - _EOCD64_LOCATOR.size - _EOCD64.size
    if disk != 0 or cd_disk != 0 or n_disk != n_entries:
        fail("multi-disk ZIP archives are not sparsekm files.")
    if n_entries > _MAX_MEMBERS:
        fail(f"the ZIP directory declares {n_entries} members; sparsekm files have at most "
             f"{_MAX_MEMBERS} (refused before reading the directory).")
    if cd_offset + cd_size != end_of_cd:
        fail("the ZIP central directory is not where its end record says (data prepended "
             "or the directory edited).")
    fh.seek(cd_offset)
    cd = fh.read(cd_size)
    count, pos = 0, 0
    while pos < len(cd):
        if count >= max(n_entries, 1) or pos + _CENTRAL.size > len(cd):
            fail(f"the ZIP directory holds more entries than the {n_entries} it declares.")
        h = _CENTRAL.unpack_from(cd, pos)
        if h[0] != b"PK\x01\x02":
            fail("malformed ZIP central directory.")
        name = cd[pos + _CENTRAL.size:pos + _CENTRAL.size + h[10]]
        extra = cd[pos + _CENTRAL.size + h[10]:pos + _CENTRAL.size + h[10] + h[11]]
        if b"\0" in name:  # zipfile cuts the name there: the rest would be unauthenticated
            fail(f"member name {name[:60]!r} holds a NUL byte.")
        if h[12]:
            fail(f"member {name[:60]!r} carries a {h[12]}-byte comment; sparsekm files have none.")
        _zip64_only(extra, name, fail, _central_zip64_values(h, extra))
        pos += _CENTRAL.size + h[10] + h[11] + h[12]
        count += 1
    if count != n_entries or pos != len(cd):
        fail(f"the ZIP directory declares {n_entries} members but holds {count}.")
    return n_entries, cd_offset, cd_size


def _zip64_only(extra, name, fail, values=None):
    """An extra field may hold one ZIP64 record (what :mod:`zipfile` writes) and nothing else.

    ``values``: what the record must hold exactly (a central entry: the fields its header
    marks 0xFFFFFFFF; a local header: both sizes), so that no byte of it goes unchecked.
    """
    if not extra:
        return
    tag, n = struct.unpack_from("<2H", extra) if len(extra) >= 4 else (None, None)
    if tag != 1 or 4 + n != len(extra) or n % 8:
        fail(f"member {name[:60]!r}: an extra field of {len(extra)} bytes other than one ZIP64 "
             "record; sparsekm files carry only ZIP64 sizes there.")
    if values is not None and list(struct.unpack_from(f"<{n // 8}Q", extra, 4)) != list(values):
        fail(f"member {name[:60]!r}: its ZIP64 record disagrees with the sizes and offsets "
             "the directory uses.")


def _central_zip64_values(h, extra):
    """The values a central entry's ZIP64 record must hold: those its header marks 0xFFFFFFFF,
    in the order of the specification (as :mod:`zipfile` reads them)."""
    if len(extra) < 4:
        return None
    n = struct.unpack_from("<2H", extra)[1]
    fields = list(struct.unpack_from(f"<{n // 8}Q", extra, 4)) if len(extra) >= 4 + n else []
    want = []
    for marked in (h[9] == 0xFFFFFFFF, h[8] == 0xFFFFFFFF, h[16] == 0xFFFFFFFF):
        if marked:
            want.append(fields[len(want)] if len(want) < len(fields) else None)
    return want


class _Archive:
    """Checked view of an opened sparsekm ZIP archive."""

    def __init__(self, zf, path, file_size, fh=None, directory=None):
        self.zf, self.path, self.file_size = zf, path, file_size
        self.budget = ALLOCATION_FACTOR * file_size + ALLOCATION_SLACK
        self.projection_budget = ALLOCATION_FACTOR * file_size + PROJECTION_ALLOWANCE
        self.projection_used = 0
        self.memory = _Memory(file_size, self.fail)
        infos = zf.infolist()
        if directory is not None and len(infos) != directory[0]:
            self.fail(f"the ZIP directory declares {directory[0]} members but zipfile "
                      f"read {len(infos)}.")
        if not any(info.filename == _META for info in infos):
            self.fail(f"not a sparsekm file (no {_META}).")
        if len(infos) > _MAX_MEMBERS:
            self.fail(f"{len(infos)} archive members; sparsekm files have far fewer.")
        self.members = {}
        for info in infos:
            name = info.filename
            if name in self.members:
                self.fail(f"duplicate archive member {name!r}.")
            if name not in (_META, _SIGNATURE) and not _ARRAY_MEMBER.fullmatch(name):
                self.fail(f"unexpected archive member {name[:80]!r}.")
            if info.compress_type != zipfile.ZIP_STORED:
                self.fail(f"member {name!r} is compressed (method {info.compress_type}); "
                          "sparsekm files are always stored uncompressed.")
            if info.flag_bits & 0x1:
                self.fail(f"member {name!r} is encrypted.")
            if info.file_size != info.compress_size or info.file_size > file_size:
                self.fail(f"member {name!r} declares an impossible size ({info.file_size} bytes "
                          f"in a {file_size}-byte file).")
            self.members[name] = info
        if fh is not None and directory is not None:
            self.check_local_headers(fh, directory[1])

    def check_local_headers(self, fh, cd_offset):
        """Each member's local header must agree with its central-directory entry.

        Name, flags, method, CRC and sizes (ZIP64 sizes from the extra field) must be
        equal, and the members' data must lie, without overlap, before the directory:
        a tool reading local headers then sees exactly the bytes ``load`` checks.
        """
        end = 0
        for info in sorted(self.members.values(), key=lambda i: i.header_offset):
            name = info.filename
            if info.header_offset < end:
                self.fail(f"member {name!r} overlaps the previous member.")
            if info.header_offset > end:  # every byte belongs to a header or a member's data
                self.fail(f"{info.header_offset - end} byte(s) before member {name!r} belong to "
                          "no member (data prepended, or a gap between members).")
            fh.seek(info.header_offset)
            raw = fh.read(_LOCAL.size)
            if len(raw) != _LOCAL.size:
                self.fail(f"member {name!r}: truncated local header.")
            sig, _, flags, method, _, _, crc, csize, usize, n_name, n_extra = _LOCAL.unpack(raw)
            local_name, extra = fh.read(n_name), fh.read(n_extra)
            if sig != b"PK\x03\x04" or len(extra) != n_extra:
                self.fail(f"member {name!r}: no local header at the offset the directory "
                          "gives.")
            if flags & 0x08:
                self.fail(f"member {name!r} uses a data descriptor; sparsekm files record "
                          "sizes in the local header.")
            if 0xFFFFFFFF in (csize, usize):
                csize, usize = self._zip64_sizes(extra, usize, csize, name)
            encoding = "utf-8" if flags & 0x800 else "cp437"
            try:
                local_name = local_name.decode(encoding)
            except UnicodeDecodeError:
                local_name = None
            if local_name != info.orig_filename or flags != info.flag_bits \
                    or method != info.compress_type or crc != info.CRC \
                    or csize != info.compress_size or usize != info.file_size:
                self.fail(f"member {name!r}: the local header (name {str(local_name)[:40]!r}, "
                          f"{usize} bytes, method {method}) disagrees with the central "
                          f"directory ({info.file_size} bytes, method {info.compress_type}); "
                          "the file was tampered with.")
            _zip64_only(extra, name, self.fail, (info.file_size, info.compress_size))
            end = info.header_offset + _LOCAL.size + n_name + n_extra + csize
            if end > cd_offset:
                self.fail(f"member {name!r} runs into the ZIP central directory.")
        if end != cd_offset:
            self.fail(f"{cd_offset - end} byte(s) between the last member's data and the ZIP "
                      "central directory belong to no member.")

    def _zip64_sizes(self, extra, usize, csize, name):
        pos = 0
        while pos + 4 <= len(extra):
            tag, n = struct.unpack_from("<2H", extra, pos)
            if tag == 1:
                fields = list(struct.unpack_from(f"<{n // 8}Q", extra, pos + 4))
                if usize == 0xFFFFFFFF and fields:
                    usize = fields.pop(0)
                if csize == 0xFFFFFFFF and fields:
                    csize = fields.pop(0)
                return csize, usize
            pos += 4 + n
        self.fail(f"member {name!r}: local header lacks its ZIP64 sizes.")

    def fail(self, msg):
        raise FormatError(f"{self.path}: {msg}")

    def stream(self, name):
        """Yield the member's bytes in chunks, never more than its stored size."""
        info = self.members[name]
        left = info.file_size
        with self.zf.open(info) as fh:
            while left > 0:
                chunk = fh.read(min(_CHUNK, left))
                if not chunk:
                    self.fail(f"member {name!r} is truncated.")
                left -= len(chunk)
                yield chunk

    def verify(self, key):
        if _SIGNATURE not in self.members:
            self.fail("no authentication tag: the file was saved without a key, but load() "
                      "was given one. Refusing to trust it.")
        raw = self.read_small(_SIGNATURE, 4096)
        try:
            sig = json.loads(raw)
            tag = sig["tag"]
            ok = sig["algorithm"] == "HMAC-SHA256" and isinstance(tag, str)
        except Exception:
            ok = False
        if not ok:
            self.fail("malformed authentication tag.")
        digests = {}
        for name in self.members:
            if name == _SIGNATURE:
                continue
            sha, size = hashlib.sha256(), 0
            for chunk in self.stream(name):
                sha.update(chunk)
                size += len(chunk)
            digests[name] = (size, sha.digest())
        if not hmac.compare_digest(_manifest_tag(key, digests).encode(), tag.encode("ascii", "replace")):
            self.fail("authentication failed: the HMAC-SHA256 tag does not match (wrong key, "
                      "or the file was modified after it was saved).")

    def read_small(self, name, cap):
        info = self.members[name]
        if info.file_size > cap:
            self.fail(f"member {name!r} is too large ({info.file_size} bytes; limit {cap}).")
        with self.zf.open(info) as fh:
            data = fh.read(cap + 1)  # a cap on the bytes actually read, whatever is declared
        if len(data) > cap:
            self.fail(f"member {name!r} holds more than {cap} bytes.")
        return data

    def check_specs(self, specs):
        if not isinstance(specs, dict):
            self.fail("malformed array table.")
        declared = {f"arrays/{name}.npy" for name in specs}
        present = {n for n in self.members if n not in (_META, _SIGNATURE)}
        if present - declared:
            self.fail(f"undeclared array member(s) {sorted(present - declared)[:5]}.")
        checked = {}
        for name, s in specs.items():
            if not isinstance(name, str) or not _ARRAY_MEMBER.fullmatch(f"arrays/{name}.npy"):
                self.fail(f"invalid array name {str(name)[:40]!r}.")
            member = f"arrays/{name}.npy"
            if member not in self.members:
                self.fail(f"array {name!r} is missing from the archive.")
            if not isinstance(s, dict) or not {"dtype", "shape", "sha256"} <= set(s) \
                    or not set(s) <= {"dtype", "shape", "sha256", "order"} \
                    or s.get("order", "C") not in ("C", "F"):
                self.fail(f"malformed declaration of array {name!r}.")
            try:
                dtype = np.dtype(s["dtype"]) if isinstance(s["dtype"], str) else None
            except Exception:
                dtype = None
            if dtype is None or dtype.kind not in _DTYPE_KINDS or dtype.fields is not None \
                    or dtype.itemsize == 0 or dtype.str != s["dtype"]:
                self.fail(f"array {name!r} declares an unsupported dtype {str(s['dtype'])[:40]!r}.")
            shape = s["shape"]
            if not isinstance(shape, list) or len(shape) > _MAX_NDIM or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
                self.fail(f"array {name!r} declares an invalid shape {str(shape)[:80]}.")
            shape = tuple(shape)
            nominal = _nominal_bytes(shape, dtype.itemsize)
            if nominal > self.budget:
                self.fail(f"array {name!r} declares shape {shape} ({nominal} bytes counting zero "
                          f"dimensions as one), over the allocation budget of {self.budget} bytes "
                          f"for a {self.file_size}-byte file.")
            n_bytes = math.prod(shape) * dtype.itemsize
            if n_bytes > self.members[member].file_size:
                self.fail(f"array {name!r} claims {n_bytes} bytes but its archive member holds "
                          f"only {self.members[member].file_size}; the file is truncated or "
                          "tampered with.")
            if not isinstance(s["sha256"], str) or not re.fullmatch(r"[0-9a-f]{64}", s["sha256"]):
                self.fail(f"array {name!r} has a malformed digest.")
            checked[name] = (dtype, shape, n_bytes, s["sha256"], s.get("order") == "F")
        return checked

    def read_array(self, name, dtype, shape, n_bytes, digest, fortran_order):
        member = f"arrays/{name}.npy"
        info = self.members[member]
        try:
            with self.zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(fh)
                else:
                    self.fail(f"unsupported .npy version {version} for array {name!r}.")
                if tuple(hshape) != shape or np.dtype(hdtype) != dtype \
                        or bool(fortran) != fortran_order:
                    self.fail(f"array {name!r} does not match its declared dtype/shape.")
                header = fh.tell()
                if header + n_bytes != info.file_size:
                    self.fail(f"array {name!r} has {info.file_size - header} data bytes, "
                              f"expected {n_bytes}.")
                buf = bytearray(n_bytes)
                view, got = memoryview(buf), 0
                while got < n_bytes:
                    k = fh.readinto(view[got:got + _CHUNK])
                    if not k:
                        self.fail(f"array {name!r} is truncated.")
                    got += k
                if fh.read(1):
                    self.fail(f"array {name!r} has trailing bytes.")
        except FormatError:
            raise
        except Exception as exc:
            self.fail(f"could not read array {name!r}: {exc}")
        if hashlib.sha256(buf).hexdigest() != digest:
            self.fail(f"checksum mismatch for array {name!r}; the file is corrupted.")
        if dtype.kind == "U" and n_bytes:  # code points beyond Unicode: SystemError later
            codes = np.frombuffer(buf, dtype=np.dtype("u4").newbyteorder(dtype.byteorder))
            if codes.max() > 0x10FFFF:
                self.fail(f"text array {name!r} holds code point {int(codes.max()):#x}, beyond "
                          "Unicode's last (U+10FFFF).")
        if fortran_order:
            return np.frombuffer(buf, dtype=dtype).reshape(shape[::-1]).T
        return np.frombuffer(buf, dtype=dtype).reshape(shape)



def _open_regular(path):
    """Open ``path`` for reading only if it is a regular file (never blocks on a FIFO)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"No such file: {path!r}.") from None
    if stat.S_ISDIR(st.st_mode):
        raise FormatError(f"{path} is a directory, not a sparsekm file.")
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path} is not a regular file (a FIFO, socket or device); "
                          "sparsekm files are regular files.")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)  # the path may have been swapped between stat and open
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{path} is not a regular file.")
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise

