"""Dataset and attribute writes straight into the HDF5 library h5py already loaded (ctypes).

A captured tensor is a dataset with about a dozen small attributes. Through h5py each
object costs Python-level objects (an identifier h5py registers for its bookkeeping,
conversion buffers) and runs with the GIL held: in a step of hundreds of tensors that was
most of the writer thread's CPU time, and every microsecond of it stalled the training
thread waiting for the GIL. Through ctypes the same HDF5 calls (`H5Dcreate2`, `H5Dwrite`,
`H5Acreate2`, `H5Awrite`, ...) take plain integers, create no Python objects, and run with
the GIL released; h5py's own lock (`phil`) is held around them, as h5py holds it around
every HDF5 call, so no other thread's h5py call runs inside the library meanwhile.

The types and dataspaces are h5py's own identifiers (the same ones the h5py path uses), so
the file's bytes are identical either way (tested). The library is the very instance h5py
uses: found among the process's loaded libraries and accepted only if it recognizes one of
h5py's live identifiers (`H5Iis_valid`). Where that fails (another platform, an unusual
build) `load()` returns None and the caller keeps the h5py path.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import h5py
import numpy as np

try:  # h5py's lock around every HDF5 call; private, so an h5py without it keeps the h5py path
    from h5py._objects import phil
except ImportError:  # pragma: no cover - depends on the installed h5py
    phil = None

_HID = ctypes.c_int64  # hid_t since HDF5 1.10
_HERR = ctypes.c_int  # herr_t
_H5P_DEFAULT = 0
_H5S_ALL = 0
_HADDR_UNDEF = (1 << 64) - 1


class Hdf5Calls:
    """Contiguous datasets; scalar int64, int64 array and variable-length UTF-8 string
    attributes."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._create = lib.H5Acreate2
        self._create.argtypes = [_HID, ctypes.c_char_p, _HID, _HID, _HID, _HID]
        self._create.restype = _HID
        self._write = lib.H5Awrite
        self._write.argtypes = [_HID, _HID, ctypes.c_void_p]
        self._write.restype = _HERR
        self._close = lib.H5Aclose
        self._close.argtypes = [_HID]
        self._close.restype = _HERR
        self._dcreate = lib.H5Dcreate2
        self._dcreate.argtypes = [_HID, ctypes.c_char_p, _HID, _HID, _HID, _HID, _HID]
        self._dcreate.restype = _HID
        self._dwrite = lib.H5Dwrite
        self._dwrite.argtypes = [_HID, _HID, _HID, _HID, _HID, ctypes.c_void_p]
        self._dwrite.restype = _HERR
        self._doffset = lib.H5Dget_offset
        self._doffset.argtypes = [_HID]
        self._doffset.restype = ctypes.c_uint64
        self._dclose = lib.H5Dclose
        self._dclose.argtypes = [_HID]
        self._dclose.restype = _HERR

    @classmethod
    def load(cls, probe: h5py.h5s.SpaceID) -> Hdf5Calls | None:
        """The calls on h5py's own HDF5 library, or None where it cannot be found for sure.
        `probe`: a live h5py identifier the library must recognize."""
        if phil is None:
            return None
        for path in _loaded_hdf5_libraries():
            try:
                mode = getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_LOCAL
                lib = ctypes.CDLL(path, mode=mode, use_errno=True)
                is_valid = lib.H5Iis_valid
            except (OSError, AttributeError):
                continue
            is_valid.argtypes = [_HID]
            is_valid.restype = ctypes.c_int
            with phil:
                if is_valid(probe.id) > 0:
                    return cls(lib)
        return None

    def create_dataset(
        self, loc: int, path: bytes, type_id: int, space_id: int, lcpl: int, dcpl: int
    ) -> int:
        """A new dataset's identifier; close it with `close_dataset`."""
        with phil:
            ctypes.set_errno(0)
            dataset = self._dcreate(loc, path, type_id, space_id, lcpl, dcpl, _H5P_DEFAULT)
        if dataset < 0:
            raise _failed(f"HDF5 could not create dataset {path.decode()!r}")
        return dataset

    def write_dataset(self, dataset: int, type_id: int, buffer: int) -> None:
        """All of the dataset's elements from `buffer` (an address), through HDF5."""
        with phil:
            ctypes.set_errno(0)
            failed = self._dwrite(dataset, type_id, _H5S_ALL, _H5S_ALL, _H5P_DEFAULT, buffer) < 0
        if failed:
            raise _failed("HDF5 could not write a dataset's bytes")

    def offset(self, dataset: int) -> int | None:
        """The file offset of the dataset's contiguous storage (None: not allocated)."""
        with phil:
            offset = self._doffset(dataset)
        return None if offset == _HADDR_UNDEF else offset

    def close_dataset(self, dataset: int) -> None:
        with phil:
            self._dclose(dataset)

    def write(self, obj: int, name: bytes, type_id: int, space_id: int, buffer: int) -> None:
        """Create attribute `name` on object `obj` and write `buffer` (an address) into it."""
        with phil:
            attr = self._create(obj, name, type_id, space_id, _H5P_DEFAULT, _H5P_DEFAULT)
            if attr < 0:
                raise OSError(f"HDF5 could not create attribute {name.decode()!r}")
            try:
                if self._write(attr, type_id, buffer) < 0:
                    raise OSError(f"HDF5 could not write attribute {name.decode()!r}")
            finally:
                self._close(attr)

    def write_int64(self, obj: int, name: bytes, type_id: int, space_id: int, value: int) -> None:
        cell = ctypes.c_int64(value)
        self.write(obj, name, type_id, space_id, ctypes.addressof(cell))

    def write_int64_array(
        self, obj: int, name: bytes, type_id: int, space_id: int, values: np.ndarray
    ) -> None:
        data = np.ascontiguousarray(values, dtype="<i8")
        self.write(obj, name, type_id, space_id, data.ctypes.data)

    def write_string(self, obj: int, name: bytes, type_id: int, space_id: int, text: bytes) -> None:
        """`type_id`: a variable-length string type, which in memory is one `char *`."""
        pointer = ctypes.c_char_p(text)
        self.write(obj, name, type_id, space_id, ctypes.addressof(pointer))


def _failed(what: str) -> OSError:
    """An OSError with the errno the failing system call left (ENOSPC on a full disk)."""
    code = ctypes.get_errno()
    return OSError(code, f"{what}: {os.strerror(code)}") if code else OSError(what)


def _loaded_hdf5_libraries() -> list[str]:
    """Paths of the HDF5 C libraries mapped into this process (Linux), h5py's own first."""
    maps = Path("/proc/self/maps")
    if not maps.exists():
        return []
    found: list[str] = []
    for line in maps.read_text().splitlines():
        parts = line.split(maxsplit=5)
        path = parts[5] if len(parts) == 6 else ""
        name = os.path.basename(path)
        # The C library (a wheel's libhdf5-<hash>.so, Debian's libhdf5_serial.so), not its
        # C++/Fortran/high-level companions.
        wrapper = any(part in name for part in ("_hl", "_cpp", "fortran"))
        if name.startswith("libhdf5") and not wrapper and path not in found:
            found.append(path)
    h5py_dir = os.path.dirname(os.path.dirname(h5py.__file__))
    return sorted(found, key=lambda p: not p.startswith(h5py_dir))
