"""Dataset and attribute creation through h5py's low-level API.

A captured tensor is one dataset with about a dozen small attributes. h5py's high-level
`attrs[name] = value` creates each attribute under a temporary name, renames it and guesses
its type every time: in a training step that writes hundreds of tensors this was most of
the writer's CPU time, taken from the training job's cores. The types written here are the
ones h5py's high-level API picks (scalar int64, variable-length UTF-8 strings, int64
arrays), so files are identical in layout and readers see no difference.

A large dataset's bytes are written with `os.pwrite`, which releases the GIL, instead of
through `H5Dwrite`, which h5py calls holding it: a capture's writer thread writing hundreds
of megabytes per step otherwise stalls the training thread at every Python bytecode it
runs. HDF5 still allocates the storage: its first rows (at least the size of HDF5's sieve
buffer, so that no sieve buffer ever caches part of the dataset) go through `H5Dwrite`,
then the rest goes straight to the dataset's file offset. The file's bytes are the same as
with one `H5Dwrite` (the storage is the same contiguous extent, allocated at the same point,
no fill value is written either way).
"""

from __future__ import annotations

import os
from typing import Any

import h5py
import numpy as np

_UTF8 = h5py.string_dtype("utf-8")
# Datasets at least this large are written mostly with os.pwrite (below: H5Dwrite).
DIRECT_WRITE_BYTES = 1 << 20
_CACHED = 4096  # entries of each cache below, at most


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
        self._sieve_bytes: int | None = None
        # Types, dataspaces and string values recur from dataset to dataset: HDF5 copies
        # them into each object header, so one of each serves all (and h5py registers every
        # new identifier it hands out, which cost as much as the HDF5 calls).
        self._types: dict[np.dtype, h5py.h5t.TypeID] = {}
        self._spaces: dict[tuple[int, ...], h5py.h5s.SpaceID] = {}
        self._strings: dict[str, np.ndarray] = {}
        self._names: dict[str, bytes] = {}

    def create_dataset(
        self, file: h5py.File, path: str, data: np.ndarray, fd: int | None = None
    ) -> h5py.h5d.DatasetID:
        """A contiguous dataset at `path` (intermediate groups created) holding `data`.
        `fd`: a descriptor of the same file open for writing, for the direct path."""
        space = self._space(data.shape)
        dtype = self._types.get(data.dtype)
        if dtype is None:
            dtype = self._types[data.dtype] = h5py.h5t.py_create(data.dtype)
        dataset = h5py.h5d.create(
            file.id, path.encode("utf-8"), dtype, space, dcpl=self._dcpl, lcpl=self._lcpl
        )
        if data.size:
            head = self._head_rows(file, data) if fd is not None else data.shape[0]
            if head >= data.shape[0]:
                dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
            else:
                _write_split(dataset, data, head, fd)
        return dataset

    def _head_rows(self, file: h5py.File, data: np.ndarray) -> int:
        """How many leading rows of `data` go through H5Dwrite (all: no direct path)."""
        if data.nbytes < DIRECT_WRITE_BYTES or data.ndim == 0 or not _plain_bytes(data):
            return data.shape[0] if data.ndim else 1
        if self._sieve_bytes is None:
            self._sieve_bytes = file.id.get_access_plist().get_sieve_buf_size()
        row_bytes = data.nbytes // data.shape[0]
        return max(1, -(-self._sieve_bytes // row_bytes)) if row_bytes else data.shape[0]

    def _space(self, shape: tuple[int, ...]) -> h5py.h5s.SpaceID:
        space = self._spaces.get(shape)
        if space is None:
            if len(self._spaces) >= _CACHED:
                self._spaces.clear()
            space = self._spaces[shape] = h5py.h5s.create_simple(shape)
        return space

    def write(self, dataset: h5py.h5d.DatasetID, name: str, value: Any) -> None:
        key = self._names.get(name)
        if key is None:
            key = self._names[name] = name.encode("utf-8")
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


def _plain_bytes(data: np.ndarray) -> bool:
    """Does HDF5 store `data`'s memory bytes as they are (no conversion)?"""
    return (
        data.flags.c_contiguous
        and data.dtype.kind in "fiub"
        and data.dtype.byteorder in ("<", "|", "=")
        and np.little_endian
    )


def _write_split(dataset: h5py.h5d.DatasetID, data: np.ndarray, head: int, fd: int) -> None:
    """The first `head` rows through H5Dwrite (which allocates the storage), the rest with
    os.pwrite at the storage's offset in the file."""
    file_space = dataset.get_space()
    start = (0,) * data.ndim
    file_space.select_hyperslab(start, (head, *data.shape[1:]))
    first = np.ascontiguousarray(data[:head])
    dataset.write(h5py.h5s.create_simple(first.shape), file_space, first)
    offset = dataset.get_offset()
    if offset is None:
        raise OSError(f"HDF5 allocated no storage for a dataset of {data.nbytes} bytes")
    rest = memoryview(data.reshape(-1).view(np.uint8))[first.nbytes :]
    position = offset + first.nbytes
    while len(rest):
        written = os.pwrite(fd, rest, position)
        rest, position = rest[written:], position + written
