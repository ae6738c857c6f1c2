"""A small, slow Python reader of bundle format v1, used only as a test oracle.

It checks what docs/bundle-format.md asks a reader to check, with error messages that
contain the phrases of broken/EXPECTED.txt, and merges shards into float64 tensors so the
tests can compare them with expected values. The product's reader is the C++ one.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ttrace.bundle import DType


class OracleError(Exception):
    pass


@dataclass
class Shard:
    rank: int
    attrs: dict[str, Any]
    stored: np.ndarray


def _str(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _datasets(file: h5py.File) -> list[tuple[str, h5py.Dataset]]:
    found: list[tuple[str, h5py.Dataset]] = []

    def visit(name: str, obj: object) -> None:
        if isinstance(obj, h5py.Dataset):
            found.append(("/" + name, obj))

    file.visititems(visit)
    return found


def load(bundle: Path) -> tuple[dict[str, Any], dict[str, list[Shard]]]:
    manifest_path = bundle / "manifest.json"
    if not manifest_path.exists():
        raise OracleError(f"{manifest_path}: manifest.json is missing")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise OracleError(f"{manifest_path}: manifest.json is not valid JSON: {error}") from None
    if manifest.get("format_version") not in (1, 2):
        raise OracleError(
            f"{manifest_path}: format_version {manifest.get('format_version')}, expected 1 or 2"
        )
    shards: dict[str, list[Shard]] = {}
    for entry in manifest["ranks"]:
        rank, name = entry["rank"], entry["file"]
        path = bundle / name
        if not path.exists():
            raise OracleError(f"rank {rank}: {name} is missing")
        if not h5py.is_hdf5(path):
            raise OracleError(f"rank {rank}: {name} is not an HDF5 file")
        try:
            file = h5py.File(path, "r")
        except OSError as error:
            raise OracleError(f"rank {rank}: {name} cannot be read: {error}") from None
        with file:
            if int(file.attrs["rank"]) != rank:
                raise OracleError(
                    f"{name}: rank attribute {int(file.attrs['rank'])}, expected rank {rank}"
                )
            datasets = _datasets(file)
            nbytes = sum(d.nbytes for _, d in datasets)
            if len(datasets) != entry["tensors"] or nbytes != entry["bytes"]:
                raise OracleError(
                    f"rank {rank}: {name} holds {len(datasets)} tensors ({nbytes} bytes), "
                    f"the manifest records {entry['tensors']} tensors ({entry['bytes']} bytes)"
                )
            for path_in_file, dataset in datasets:
                attrs = {
                    k: (_str(v) if isinstance(v, str | bytes) else v)
                    for k, v in dataset.attrs.items()
                }
                try:
                    dtype = DType.from_name(attrs["dtype"])
                except ValueError as error:
                    raise OracleError(f"{name}: {path_in_file}: {error}") from None
                if dataset.dtype != dtype.storage:
                    raise OracleError(
                        f"{name}: {path_in_file}: storage {dataset.dtype} for {dtype.name}"
                    )
                shards.setdefault(path_in_file, []).append(Shard(rank, attrs, dataset[()]))
    return manifest, shards


def _elements(shard: Shard, shape: tuple[int, ...], where: str) -> tuple[np.ndarray, np.ndarray]:
    """(global flat indices, local flat indices) of the elements this shard places."""
    numel = math.prod(shape)
    if shard.attrs["placement"] == "flat":
        ranges = np.asarray(shard.attrs["flat_ranges"]).reshape(-1, 3)
        if any(go + n > numel for _, go, n in ranges):
            raise OracleError(
                f"{where}: rank {shard.rank}: flat range outside global_shape {shape}"
            )
        g = [np.arange(go, go + n) for _, go, n in ranges]
        loc = [np.arange(lo, lo + n) for lo, _, n in ranges]
        return np.concatenate(g), np.concatenate(loc)
    boxes = np.asarray(shard.attrs["boxes"]).reshape(-1, len(shape), 3)
    grid = np.arange(numel).reshape(shape)
    local_grid = np.arange(shard.stored.size).reshape(shard.stored.shape)
    g_parts, l_parts = [], []
    for box in boxes:
        if any(gs + n > shape[d] for d, (_, gs, n) in enumerate(box)):
            raise OracleError(
                f"{where}: rank {shard.rank}: box {box.tolist()} outside global_shape {shape}"
            )
        g_parts.append(grid[tuple(slice(gs, gs + n) for _, gs, n in box)].ravel())
        l_parts.append(local_grid[tuple(slice(ls, ls + n) for ls, _, n in box)].ravel())
    return np.concatenate(g_parts), np.concatenate(l_parts)


def merge(path: str, shards: list[Shard]) -> tuple[np.ndarray, np.ndarray | None]:
    """(float64 logical tensor, storage bits of it or None for sums)."""
    first = shards[0].attrs
    shape = tuple(int(n) for n in first["global_shape"])
    dtype = DType.from_name(first["dtype"])
    combine = first["combine"]
    for s in shards:
        if tuple(s.attrs["global_shape"]) != shape or s.attrs["combine"] != combine:
            raise OracleError(f"{path}: shards disagree on global_shape or combine")
    numel = math.prod(shape)
    groups: dict[int, list[Shard]] = {}
    for s in sorted(shards, key=lambda s: s.rank):
        partial = int(s.attrs.get("partial_index", 0)) if combine == "sum" else 0
        groups.setdefault(partial, []).append(s)
    covered = np.zeros(numel, dtype=bool)
    total = np.zeros(numel, dtype=np.float64)
    bits = np.zeros(numel, dtype=dtype.storage)
    for group in groups.values():
        owner = np.full(numel, -1)
        value_bits = np.zeros(numel, dtype=dtype.storage)
        for s in group:
            g, loc = _elements(s, shape, path)
            local_bits = s.stored.ravel()[loc]
            seen = owner[g] >= 0
            if seen.any():
                if combine == "copy":
                    raise OracleError(f"{path}: rank {s.rank} overlaps another copy shard")
                as_uint = np.dtype(f"u{dtype.storage.itemsize}")
                differ = value_bits[g[seen]].view(as_uint) != local_bits[seen].view(as_uint)
                if differ.any():
                    other = owner[g[seen]][differ][0]
                    raise OracleError(f"{path}: replicas on ranks {other} and {s.rank} disagree")
            fresh = ~seen
            owner[g[fresh]] = s.rank
            value_bits[g[fresh]] = local_bits[fresh]
        present = owner >= 0
        # Assign where nothing was yet: adding to a zero start would turn -0.0 into +0.0.
        decoded = dtype.decode(value_bits[present])
        total[present] = np.where(covered[present], total[present] + decoded, decoded)
        bits[present] = value_bits[present]
        covered |= present
    if not covered.all():
        first_hole = np.unravel_index(int(np.argmin(covered)), shape)
        raise OracleError(
            f"{path}: hole, element {tuple(int(i) for i in first_hole)} is not covered"
        )
    return total.reshape(shape), (None if combine == "sum" else bits.reshape(shape))


def read_all(bundle: Path) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    _, shards = load(bundle)
    return {path: merge(path, group) for path, group in shards.items()}
