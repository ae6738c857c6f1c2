"""Writes one rank's file of a trace bundle."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import h5py
import numpy as np

from .attribute_writer import AttributeWriter
from .checksum import file_checksum
from .complex_pairs import as_real_pairs
from .disk_space import reserve
from .dtypes import DType
from .file_locking import h5py_locking
from .key import TensorKey
from .placement import Placement
from .rank_record import RankRecord

if TYPE_CHECKING:
    import torch

FORMAT = "ttrace-bundle"
FORMAT_VERSION = 2
# Version 2 adds records of repeated calls (`<module>@call<k>`) and of recomputed forwards
# (`<module>@recompute`); a version 1 bundle reads unchanged.
READABLE_VERSIONS = (1, 2)
COORD_NAMES = ("tp", "pp", "dp", "cp", "ep", "vpp")
ROLES = ("reference", "candidate")
# Optional string attributes of a tensor dataset: how capture decided its placement.
NOTE_ATTRS = ("layout_note", "annotate_hint")
# Metadata cache of a rank file. Large enough that HDF5 never evicts (writes back in place)
# metadata between two flushes of one step's datasets: the file on disk then stays as it
# was at the last flush, readable after the job is killed (docs/capture.md, "Interrupted
# captures").
METADATA_CACHE_BYTES = 32 << 20
# Blocks reserved past HDF5's end of file before a flush, for metadata it allocates while
# flushing (disk_space.py).
FLUSH_SLACK_BYTES = 64 << 10
# Test hook (docs/capture.md, "A full disk"): where a test cannot mount a small file system,
# the rank file's tensors may take this many bytes; the write past it fails with ENOSPC
# before touching the file, as the write of a full disk would.
TEST_DISK_BYTES_ENV = "TTRACE_TEST_DISK_BYTES"
# Every this many bytes of tensors the writer asks the kernel to start writing the file's
# dirty pages back (sync_file_range, without waiting): the disk then works while the writer
# encodes the next tensors, and the fsync at close waits only for the last few.
WRITEBACK_BYTES = 8 << 20
# Python's os module has no sync_file_range: the C library's (Linux), where there is one.
_SYNC_FILE_RANGE_WRITE = 2


def _libc_sync_file_range() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fn = libc.sync_file_range
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_sync_file_range = _libc_sync_file_range()


def start_writeback(fd: int) -> None:
    """Ask the kernel to start writing `fd`'s dirty pages back, without waiting. Advisory:
    where the call is missing or refused the fsync at close does all the work."""
    if _sync_file_range is not None:
        _sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)


def rank_file_name(rank: int) -> str:
    return f"rank-{rank:05d}.h5"


class BundleWriter:
    """Creates ``<bundle_dir>/rank-NNNNN.h5`` and writes this rank's shards into it.

    Synchronous on purpose: the capture layer owns threading and back-pressure, this class
    owns the format. Every write is validated before anything touches the file, and errors
    name the tensor's path, because a capture hook far from the user's code is a hard
    place to debug a bad placement.
    """

    def __init__(
        self,
        bundle_dir: str | os.PathLike[str],
        rank: int,
        world_size: int,
        role: str,
        coords: Mapping[str, int] | None = None,
    ) -> None:
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"rank {rank} is not in [0, world_size={world_size})")
        if role not in ROLES:
            raise ValueError(f"role must be 'reference' or 'candidate', got {role!r}")
        unknown = set(coords or {}) - set(COORD_NAMES)
        if unknown:
            raise ValueError(f"unknown coordinates {sorted(unknown)}; known: {COORD_NAMES}")
        self.rank = rank
        self.world_size = world_size
        self.role = role
        # Absent coordinates are 0: a reference, or a job without that parallelism.
        self.coords = {name: int((coords or {}).get(name, 0)) for name in COORD_NAMES}
        self.bundle_dir = Path(bundle_dir)
        self.bundle_dir.mkdir(parents=True, exist_ok=True)
        self.file_name = rank_file_name(rank)
        self.path = self.bundle_dir / self.file_name
        self._file: h5py.File | None = _create_file(self.path)
        limit = os.environ.get(TEST_DISK_BYTES_ENV)
        self._test_disk_bytes = int(limit) if limit else None
        _enlarge_metadata_cache(self._file)
        self._attrs = AttributeWriter()
        # The same file for datasets' bytes, written outside the GIL (AttributeWriter).
        self._fd: int | None = os.open(self.path, os.O_WRONLY) if hasattr(os, "pwrite") else None
        self._written: set[str] = set()
        self._bytes = 0
        self._writeback_at = 0  # self._bytes when writeback was last started
        self.last_path = ""  # the tensor written last
        # What the file on disk holds since its last flush: what a reader can rely on.
        self.durable_size = 0
        self.durable_tensors = 0
        self.durable_bytes = 0
        self.abandoned = False  # see abandon()
        self._record: RankRecord | None = None
        attrs = self._file.attrs
        attrs["format"] = FORMAT
        attrs["format_version"] = np.int64(FORMAT_VERSION)
        attrs["rank"] = np.int64(rank)
        attrs["world_size"] = np.int64(world_size)
        attrs["role"] = role
        for name, value in self.coords.items():
            attrs[f"coord_{name}"] = np.int64(value)
        self.flush()  # from here on the file on disk is a valid (empty) rank file

    def write(
        self,
        key: TensorKey,
        tensor: torch.Tensor | np.ndarray | np.generic,
        placement: Placement | None = None,
        *,
        dtype: str | None = None,
        notes: Mapping[str, str] | None = None,
    ) -> None:
        """Store ``tensor`` (this rank's local shard) bit-exactly under ``key``.

        ``notes``: optional string attributes saying how the placement was decided
        (``layout_note``, ``annotate_hint``; see docs/bundle-format.md).

        ``placement=None`` means the tensor is whole on this rank. ``dtype`` names the
        element type of a numpy array of raw bits (uint16 for bfloat16/float16, uint8 for
        float8), for callers without torch.
        """
        if self._file is None:
            raise RuntimeError(f"rank {self.rank}: cannot write {key.path}: the writer is closed")
        if not isinstance(key, TensorKey):
            raise TypeError(f"key must be a TensorKey, got {type(key).__name__}")
        path = key.path
        if path in self._written:
            raise ValueError(f"rank {self.rank}: {path} was already written")
        try:
            tensor, placement, complex_name = as_real_pairs(tensor, placement)
            kind, stored, is_scalar = self._encode(tensor, dtype)
            if placement is None:
                placement = Placement.full(() if is_scalar else stored.shape)
            placement.check_local(stored.shape)
        except (ValueError, TypeError) as error:
            raise type(error)(f"rank {self.rank}: {path}: {error}") from error
        if placement.combine == "sum" and placement.partial_index is None:
            # Without a stated partial index every rank's shard is its own partial.
            placement = placement.with_partial(self.rank)

        if (
            self._test_disk_bytes is not None
            and self._bytes + stored.nbytes > self._test_disk_bytes
        ):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
        attrs = self._tensor_attrs(key, kind.name, placement, is_scalar, complex_name, notes)
        self._attrs.write_tensor(self._file, path, stored, self._fd, attrs)
        self._written.add(path)
        self._bytes += stored.nbytes
        self.last_path = path
        if self._bytes - self._writeback_at >= WRITEBACK_BYTES:
            self._start_writeback()

    def _tensor_attrs(
        self,
        key: TensorKey,
        dtype_name: str,
        placement: Placement,
        is_scalar: bool,
        complex_name: str | None,
        notes: Mapping[str, str] | None,
    ) -> dict[str, Any]:
        """The dataset's attributes: what the tensor is, where it sits, and its notes."""
        attrs: dict[str, Any] = {
            "dtype": dtype_name,
            "variant": key.variant,
            "iteration": np.int64(key.iteration),
            "micro_batch": np.int64(key.micro_batch),
            "module": key.module,
            "kind": key.kind,
            "index": key.index,
            **placement.to_attrs(),
        }
        if is_scalar:
            attrs["is_scalar"] = np.int64(1)
        if complex_name is not None:
            attrs["complex"] = complex_name
        for name, text in (notes or {}).items():
            if name not in NOTE_ATTRS:
                raise ValueError(f"rank {self.rank}: {key.path}: unknown note {name!r}")
            attrs[name] = str(text)
        return attrs

    def _start_writeback(self) -> None:
        """Start writing the file's dirty pages to the disk, without waiting for it."""
        self._writeback_at = self._bytes
        if self._fd is not None:
            start_writeback(self._fd)

    @staticmethod
    def _encode(
        tensor: torch.Tensor | np.ndarray | np.generic, dtype: str | None
    ) -> tuple[DType, np.ndarray, bool]:
        """(dtype, little-endian storage array of at least 1 dimension, was it 0-d)."""
        if isinstance(tensor, np.ndarray | np.generic):
            array = np.asarray(tensor)
            if dtype is not None and DType.from_name(dtype).raw and array.dtype.kind in "ui":
                kind = DType.from_name(dtype)
                stored = kind.encode_raw(array)
            else:
                kind = DType.from_numpy(array.dtype)
                if dtype is not None and dtype != kind.name:
                    raise ValueError(f"dtype={dtype!r} contradicts the array's {array.dtype}")
                stored = kind.encode_numpy(array)
        else:
            import torch

            if not isinstance(tensor, torch.Tensor):
                raise TypeError(f"expected a torch.Tensor or numpy array, got {type(tensor)}")
            if dtype is not None and dtype != str(tensor.dtype).removeprefix("torch."):
                raise ValueError(f"dtype={dtype!r} contradicts the tensor's {tensor.dtype}")
            if tensor.layout != torch.strided:
                raise ValueError(f"only strided tensors can be stored, got {tensor.layout}")
            kind = DType.from_torch(tensor.dtype)
            local = tensor.detach().to("cpu").contiguous()
            stored = kind.encode_torch(local)
        # Decided from the input: np.ascontiguousarray turns 0-d arrays into 1-d ones.
        is_scalar = len(tensor.shape) == 0
        return kind, np.ascontiguousarray(stored.reshape(1) if is_scalar else stored), is_scalar

    def flush(self) -> None:
        """Write HDF5's metadata: the file on disk then holds every tensor written so far.
        On a full disk this raises OSError(ENOSPC) *before* writing anything (the blocks the
        metadata goes to are reserved first), so the file stays as at the previous flush."""
        if self._file is None:
            return
        hdf5_fd = self._file.id.get_vfd_handle()
        end = self._file.id.get_filesize() + FLUSH_SLACK_BYTES
        # From the last flush on: a flush that shrinks the file frees blocks reserved past it.
        reserve(hdf5_fd, self.durable_size, end - self.durable_size)
        self._file.flush()
        self.durable_size = os.fstat(hdf5_fd).st_size
        self.durable_tensors, self.durable_bytes = len(self._written), self._bytes

    def abandon(self) -> None:
        """After a failed write or flush: close the file without writing anything more, and
        cut it back to its size at the last flush, so it is that flush's valid HDF5 file
        (the bytes past it are dataset bytes written since, which nothing on disk refers
        to). On a full disk this also gives back the space they took.

        HDF5 cannot close a file without flushing it, and a flush on a full disk can write
        part of the metadata; so its descriptor is first replaced by a read-only one of the
        same file, on which every write of that close fails."""
        if self._file is None:
            return
        self.abandoned = True
        hdf5_fd = self._file.id.get_vfd_handle()
        read_only = os.open(self.path, os.O_RDONLY)
        try:
            os.dup2(read_only, hdf5_fd)
        finally:
            os.close(read_only)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        os.truncate(self.path, self.durable_size)
        with contextlib.suppress(Exception):  # its writes fail by design (see above)
            self._file.close()
        self._file = None

    @property
    def tensors(self) -> int:
        return len(self._written)

    @property
    def bytes(self) -> int:
        return self._bytes

    def close(self) -> RankRecord:
        """Close the file and return this rank's manifest entry (again on repeated calls)."""
        if self._file is not None or self._record is None:
            if self._file is not None:
                self._file.close()
            self._file = None
            # The checksum reads the file back from the page cache while the disk writes it.
            size, crc = file_checksum(self.path)
            self._sync()
            self._record = RankRecord(
                rank=self.rank,
                file=self.file_name,
                coords=dict(self.coords),
                tensors=len(self._written),
                bytes=self._bytes,
                file_size=size,
                crc32=crc,
            )
        assert self._record is not None
        return self._record

    def _sync(self) -> None:
        """fsync the closed rank file: on the disk before the manifest names it. A file cut
        back after a failed write is not synced (the disk that failed may fail it again, and
        the failure already stopped the capture)."""
        if self.abandoned:
            return
        fd = self._fd if self._fd is not None else os.open(self.path, os.O_RDWR)
        self._fd = None
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @property
    def closed(self) -> bool:
        return self._file is None

    @property
    def record(self) -> RankRecord | None:
        """The manifest entry once closed, else None."""
        return self._record

    def __enter__(self) -> BundleWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _create_file(path: Path) -> h5py.File:
    """A new, empty rank file (an old one is replaced)."""
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    # v110 at most keeps the file readable by HDF5 1.10, which the C++ reader links. v18 at
    # least gives version-2 object headers, which keep an attribute too large for a header
    # message (64 KiB: a strided batch's `boxes`, one box per row, from about 900 rows of a
    # 3-d activation) in dense attribute storage; the version-1 headers of the earliest
    # format refuse it. HDF5 1.8 and later read both.
    fapl.set_libver_bounds(h5py.h5f.LIBVER_V18, h5py.h5f.LIBVER_V110)
    # No sieve buffer: HDF5 would keep small datasets' bytes in it and write them when the
    # dataset's handle is freed, where a failed write (a full disk) is printed, never
    # raised. Without it each H5Dwrite writes its bytes, and a failure reaches the writer.
    fapl.set_sieve_buf_size(0)
    locking = h5py_locking(path)  # file_locking.py: NFS, Lustre
    if locking is not None:
        fapl.set_file_locking(locking is not False, locking == "best-effort")
    fid = h5py.h5f.create(os.fsencode(path), h5py.h5f.ACC_TRUNC, fapl=fapl)
    return h5py.File(fid)


def _enlarge_metadata_cache(file: h5py.File) -> None:
    config = file.id.get_mdc_config()
    config.set_initial_size = True
    config.initial_size = METADATA_CACHE_BYTES
    config.min_size = METADATA_CACHE_BYTES
    config.max_size = max(config.max_size, 2 * METADATA_CACHE_BYTES)
    file.id.set_mdc_config(config)
