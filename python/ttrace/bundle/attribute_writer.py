"""Dataset and attribute creation through h5py's low-level API.

A captured tensor is one dataset with about a dozen small attributes. h5py's high-level
`attrs[name] = value` creates each attribute under a temporary name, renames it and guesses
its type every time: in a training step that writes hundreds of tensors this was most of
the writer's CPU time, taken from the training job's cores. The types written here are the
ones h5py's high-level API picks (scalar int64, variable-length UTF-8 strings, int64
arrays), so files are identical in layout and readers see no difference.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

_UTF8 = h5py.string_dtype("utf-8")


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

    def create_dataset(self, file: h5py.File, path: str, data: np.ndarray) -> h5py.h5d.DatasetID:
        """A contiguous dataset at `path` (intermediate groups created) holding `data`."""
        space = h5py.h5s.create_simple(data.shape)
        dtype = h5py.h5t.py_create(data.dtype)
        dataset = h5py.h5d.create(
            file.id, path.encode("utf-8"), dtype, space, dcpl=self._dcpl, lcpl=self._lcpl
        )
        if data.size:
            dataset.write(h5py.h5s.ALL, h5py.h5s.ALL, data)
        return dataset

    def write(self, dataset: h5py.h5d.DatasetID, name: str, value: Any) -> None:
        key = name.encode("utf-8")
        if isinstance(value, str):
            attr = h5py.h5a.create(dataset, key, self._str_type, self._scalar)
            attr.write(np.array(value, dtype=_UTF8), mtype=self._str_memory)
        elif isinstance(value, np.integer) and value.dtype == np.int64:
            attr = h5py.h5a.create(dataset, key, self._i64_type, self._scalar)
            attr.write(np.asarray(value, dtype="<i8"))
        elif isinstance(value, np.ndarray) and value.dtype == np.int64 and value.size:
            space = h5py.h5s.create_simple(value.shape)
            attr = h5py.h5a.create(dataset, key, self._i64_type, space)
            attr.write(np.ascontiguousarray(value, dtype="<i8"))
        else:
            # Anything else (an empty shape of a 0-d tensor) the way h5py always wrote it.
            h5py.AttributeManager(h5py.Dataset(dataset))[name] = value
