"""Datasets and their attributes, written below h5py's high-level API.

A captured tensor is one dataset with about a dozen small attributes. h5py's high-level
`attrs[name] = value` creates each attribute under a temporary name, renames it and guesses
its type every time, and even its low-level API creates and registers a Python object per
HDF5 identifier: in a training step that writes hundreds of tensors that was most of the
writer's CPU time, taken from the training job's cores with the GIL held. Datasets and
attributes are created through the HDF5 library's own calls (`hdf5_calls`, GIL released;
h5py's low-level API where that library cannot be reached). The types written are the ones
h5py's high-level API picks (scalar int64, variable-length UTF-8 strings, int64 arrays), so
readers see no difference, and both routes write the same file bytes (tested).

A dataset's bytes (from `DIRECT_WRITE_BYTES` up) are written with `os.pwrite`, which
releases the GIL, instead of through `H5Dwrite`, which h5py calls holding it: a capture's
writer thread writing hundreds of megabytes per step otherwise stalls the training thread at
every Python bytecode it runs (the training thread waits for the GIL after each torch call
that released it). HDF5 allocates such a dataset's contiguous storage when it creates the
dataset (early allocation, no fill value ever written), the writer asks for its file offset
and writes the bytes there. Readers see an ordinary contiguous dataset; only the dataset's
fill-value message says the storage was allocated early. Small datasets go through
`H5Dwrite`, where one call costs less than the offset query and the extra system call.
"""

from __future__ import annotations

import os
from typing import Any

import h5py
import numpy as np

from .hdf5_calls import Hdf5Calls

_UTF8 = h5py.string_dtype("utf-8")
# Datasets at least this large are written with os.pwrite (below: H5Dwrite). Typical
# activations (hundreds of KiB) must take the direct path: they hold most captured bytes.
DIRECT_WRITE_BYTES = 16 << 10
_CACHED = 4096  # entries of each cache below, at most
# A tensor's attributes stay in its object header up to this many (HDF5's default, 8, would
# move each tensor's dozen attributes into a heap and B-tree of their own, doubling the
# file's metadata); one too large for the header goes to dense storage whatever the count.
_COMPACT_ATTRS, _DENSE_ATTRS = 64, 48


class AttributeWriter:
    def __init__(self) -> None:
        self._scalar = h5py.h5s.create(h5py.h5s.SCALAR)
        self._str_type = h5py.h5t.py_create(_UTF8, logical=True)
        self._str_memory = h5py.h5t.py_create(_UTF8)  # object pointers, as h5py writes them
        self._i64_type = h5py.h5t.py_create(np.dtype("<i8"))
        self._lcpl = h5py.h5p.create(h5py.h5p.LINK_CREATE)
        self._lcpl.set_create_intermediate_group(True)
        self._lcpl.set_char_encoding(h5py.h5t.CSET_UTF8)
        # No modification times: h5py's default, and reproducible files.
        self._dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        self._dcpl.set_obj_track_times(False)
        self._dcpl.set_attr_phase_change(_COMPACT_ATTRS, _DENSE_ATTRS)
        # Direct datasets: storage allocated at creation, so its offset is known at once.
        self._dcpl_direct = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        self._dcpl_direct.set_obj_track_times(False)
        self._dcpl_direct.set_attr_phase_change(_COMPACT_ATTRS, _DENSE_ATTRS)
        self._dcpl_direct.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        self._dcpl_direct.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        # Types, dataspaces and string values recur from dataset to dataset: HDF5 copies
        # them into each object header, so one of each serves all (and h5py registers every
        # new identifier it hands out, which cost as much as the HDF5 calls).
        self._types: dict[np.dtype, h5py.h5t.TypeID] = {}
        self._spaces: dict[tuple[int, ...], h5py.h5s.SpaceID] = {}
        self._strings: dict[str, np.ndarray] = {}
        self._names: dict[str, bytes] = {}
        # The same datasets and attributes without h5py objects and outside the GIL, where
        # the library can be reached (hdf5_calls); else through h5py.
        self._calls = Hdf5Calls.load(self._scalar)
        self._encoded: dict[str, bytes] = {}

    def write_tensor(
        self,
        file: h5py.File,
        path: str,
        data: np.ndarray,
        fd: int | None,
        attrs: dict[str, Any],
    ) -> None:
        """A contiguous dataset at `path` (intermediate groups created) holding `data`, with
        `attrs`. `fd`: a descriptor of the same file open for writing, for the direct path."""
        space = self._space(data.shape)
        dtype = self._types.get(data.dtype)
        if dtype is None:
            dtype = self._types[data.dtype] = h5py.h5t.py_create(data.dtype)
        direct = fd is not None and data.nbytes >= DIRECT_WRITE_BYTES and _plain_bytes(data)
        dcpl = self._dcpl_direct if direct else self._dcpl
        calls = self._calls
        if calls is None:
            dataset = h5py.h5d.create(
                file.id, path.encode("utf-8"), dtype, space, dcpl=dcpl, lcpl=self._lcpl
            )
            if direct:
                assert fd is not None
                _write_direct(dataset.get_offset(), data, fd)
            elif data.size:
                dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
            for name, value in attrs.items():
                self._write_with_h5py(dataset, name, value)
            return
        hid = calls.create_dataset(
            file.id.id, path.encode("utf-8"), dtype.id, space.id, self._lcpl.id, dcpl.id
        )
        try:
            if direct:
                assert fd is not None
                _write_direct(calls.offset(hid), data, fd)
            elif data.size:
                contiguous = np.ascontiguousarray(data)  # held: HDF5 reads its memory
                calls.write_dataset(hid, dtype.id, contiguous.ctypes.data)
            for name, value in attrs.items():
                if not self._write_with_calls(hid, self._key(name), value):
                    with h5py.h5d.open(file.id, path.encode("utf-8")) as dataset:
                        self._write_with_h5py(dataset, name, value)
        finally:
            calls.close_dataset(hid)

    def _key(self, name: str) -> bytes:
        key = self._names.get(name)
        if key is None:
            key = self._names[name] = name.encode("utf-8")
        return key

    def _space(self, shape: tuple[int, ...]) -> h5py.h5s.SpaceID:
        space = self._spaces.get(shape)
        if space is None:
            if len(self._spaces) >= _CACHED:
                self._spaces.clear()
            space = self._spaces[shape] = h5py.h5s.create_simple(shape)
        return space

    def _write_with_h5py(self, dataset: h5py.h5d.DatasetID, name: str, value: Any) -> None:
        key = self._key(name)
        if isinstance(value, str):
            attr = h5py.h5a.create(dataset, key, self._str_type, self._scalar)
            text = self._strings.get(value)
            if text is None:
                if len(self._strings) >= _CACHED:
                    self._strings.clear()
                text = self._strings[value] = np.array(value, dtype=_UTF8)
            attr.write(text, mtype=self._str_memory)
        elif isinstance(value, np.integer) and value.dtype == np.int64:
            attr = h5py.h5a.create(dataset, key, self._i64_type, self._scalar)
            attr.write(np.asarray(value, dtype="<i8"))
        elif isinstance(value, np.ndarray) and value.dtype == np.int64 and value.size:
            attr = h5py.h5a.create(dataset, key, self._i64_type, self._space(value.shape))
            attr.write(np.ascontiguousarray(value, dtype="<i8"))
        else:
            # Anything else (an empty shape of a 0-d tensor) the way h5py always wrote it.
            h5py.AttributeManager(h5py.Dataset(dataset))[name] = value

    def _write_with_calls(self, obj: int, key: bytes, value: Any) -> bool:
        """Through `Hdf5Calls` the types `_write_with_h5py` writes (False: a value it does
        not cover)."""
        calls = self._calls
        assert calls is not None
        if isinstance(value, str):
            text = self._encoded.get(value)
            if text is None:
                if len(self._encoded) >= _CACHED:
                    self._encoded.clear()
                text = self._encoded[value] = value.encode("utf-8")
            if b"\0" in text:
                return False  # a C string would end there: h5py's path says what it does
            calls.write_string(obj, key, self._str_type.id, self._scalar.id, text)
        elif isinstance(value, np.integer) and value.dtype == np.int64:
            calls.write_int64(obj, key, self._i64_type.id, self._scalar.id, int(value))
        elif isinstance(value, np.ndarray) and value.dtype == np.int64 and value.size:
            space = self._space(value.shape).id
            calls.write_int64_array(obj, key, self._i64_type.id, space, value)
        else:
            return False
        return True


def _plain_bytes(data: np.ndarray) -> bool:
    """Does HDF5 store `data`'s memory bytes as they are (no conversion)?"""
    return (
        data.flags.c_contiguous
        and data.dtype.kind in "fiub"
        and data.dtype.byteorder in ("<", "|", "=")
        and np.little_endian
    )


def _write_direct(offset: int | None, data: np.ndarray, fd: int) -> None:
    """`data`'s bytes with os.pwrite (GIL released) at its dataset's storage `offset`."""
    if offset is None:
        raise OSError(f"HDF5 allocated no storage for a dataset of {data.nbytes} bytes")
    rest = memoryview(data.reshape(-1).view(np.uint8))
    position = offset
    while len(rest):
        written = os.pwrite(fd, rest, position)
        rest, position = rest[written:], position + written
