"""A small numpy reader of trace bundles, with the shard merge of docs/bundle-format.md.

The C++ core is the product's reader; this one exists so that Python tests (and users at a
prompt) can open a bundle, check it structurally and rebuild logical tensors:

    b = BundleReader("cand")
    problems = b.validate()              # [] when the bundle is whole and merges cleanly
    full = b.merged(("nominal", 0, 0, "layers.1.mlp", "forward_output", "0"))

Merged values are float64 (every stored dtype decodes exactly into float64).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from .checksum import file_checksum
from .dtypes import DType
from .file_locking import h5py_locking
from .key import TensorKey
from .writer import FORMAT, READABLE_VERSIONS, rank_file_name

Identity = tuple[str, int, int, str, str, str]


class BundleError(ValueError):
    """A structural or merge problem; the message names file, rank and tensor."""


@dataclass
class Shard:
    rank: int
    data: np.ndarray  # decoded float64, local shape
    global_shape: tuple[int, ...]
    layout: str
    boxes: np.ndarray | None
    flat_ranges: np.ndarray | None
    combine: str
    partial_index: int | None
    dtype: str
    source: str | None = None  # `placement_source`; None in bundles written before it
    # An inferred placement's name and the alternatives capture could not exclude
    # (`placement_hypothesis`, `placement_alternatives`: dicts by the attributes' names);
    # empty in bundles written before them and for placements with no alternative.
    hypothesis: str | None = None
    alternatives: tuple[dict[str, Any], ...] = ()


def _identity(key: TensorKey) -> Identity:
    return (key.variant, key.iteration, key.micro_batch, key.module, key.kind, key.index)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class BundleReader:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._files: dict[int, h5py.File] = {}
        self.path = Path(path)
        manifest = self.path / "manifest.json"
        if not manifest.exists():
            raise BundleError(f"{manifest}: missing manifest.json")
        try:
            self.manifest: dict[str, Any] = json.loads(manifest.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BundleError(f"{manifest}: unparsable JSON: {exc}") from exc
        for field in ("format", "format_version", "role", "world_size", "ranks", "variants"):
            if field not in self.manifest:
                raise BundleError(f"{manifest}: missing field {field!r}")
        version = self.manifest["format_version"]
        if self.manifest["format"] != FORMAT or version not in READABLE_VERSIONS:
            raise BundleError(
                f"{manifest}: format_version {version} is not one of {list(READABLE_VERSIONS)}"
            )
        self.world_size = int(self.manifest["world_size"])
        self._index: dict[Identity, list[tuple[int, str]]] | None = None

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    def __enter__(self) -> BundleReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # --- files ------------------------------------------------------------------------------

    def rank_path(self, rank: int) -> Path:
        return self.path / rank_file_name(rank)

    def _open(self, rank: int) -> h5py.File:
        """The rank's file, opened once and kept open while the reader lives."""
        if rank in self._files:
            return self._files[rank]
        p = self.rank_path(rank)
        if not p.exists():
            raise BundleError(f"rank {rank}: {p.name} is missing")
        if not h5py.is_hdf5(p):
            raise BundleError(f"rank {rank}: {p.name} is not an HDF5 file")
        self._check_integrity(rank, p)
        try:
            f = h5py.File(p, "r", locking=h5py_locking(p))  # file_locking.py: NFS, Lustre
        except OSError as exc:
            raise BundleError(f"rank {rank}: {p.name} is not a readable HDF5 file: {exc}") from exc
        self._files[rank] = f
        return f

    def _check_integrity(self, rank: int, p: Path) -> None:
        """Size and CRC-32 recorded in the manifest, checked before HDF5 parses the file (as
        the C++ reader does): HDF5 1.10 can crash on a file damaged in copying."""
        record = next((r for r in self.manifest["ranks"] if int(r["rank"]) == rank), {})
        want_size, want_crc = int(record.get("file_size", -1)), str(record.get("crc32", ""))
        if want_size < 0 and not want_crc:
            return
        size, crc = file_checksum(p)
        if want_size >= 0 and size != want_size:
            raise BundleError(
                f"rank {rank}: {p.name} is truncated: {size} bytes, the manifest records "
                f"{want_size}"
            )
        if want_crc and crc != want_crc:
            raise BundleError(
                f"rank {rank}: {p.name} is damaged: CRC-32 {crc}, the manifest records {want_crc}"
            )

    def _datasets(self, f: h5py.File) -> Iterator[tuple[str, h5py.Dataset]]:
        found: list[tuple[str, h5py.Dataset]] = []
        f.visititems(
            lambda name, obj: (
                found.append(("/" + name, obj)) if isinstance(obj, h5py.Dataset) else None
            )
        )
        return iter(found)

    def index(self) -> dict[Identity, list[tuple[int, str]]]:
        """identity -> [(rank, dataset path)], built once."""
        if self._index is None:
            idx: dict[Identity, list[tuple[int, str]]] = {}
            for rank in range(self.world_size):
                for path, _ in self._datasets(self._open(rank)):
                    idx.setdefault(_identity(TensorKey.from_path(path)), []).append((rank, path))
            self._index = idx
        return self._index

    def identities(self) -> list[Identity]:
        return sorted(self.index())

    # --- shards and merging -----------------------------------------------------------------

    def shards(self, identity: Identity) -> list[Shard]:
        out: list[Shard] = []
        for rank, path in sorted(self.index().get(tuple(identity), [])):
            ds = self._open(rank)[path]
            a = ds.attrs
            dtype = _text(a["dtype"])
            stored = ds[()]
            data = DType.from_name(dtype).decode(stored)
            out.append(
                Shard(
                    rank=rank,
                    data=data,
                    global_shape=tuple(int(x) for x in a["global_shape"]),
                    layout=_text(a["placement"]),
                    boxes=np.asarray(a["boxes"]) if "boxes" in a else None,
                    flat_ranges=np.asarray(a["flat_ranges"]) if "flat_ranges" in a else None,
                    combine=_text(a["combine"]),
                    partial_index=int(a["partial_index"]) if "partial_index" in a else None,
                    dtype=dtype,
                    source=_text(a["placement_source"]) if "placement_source" in a else None,
                    hypothesis=_text(a["placement_hypothesis"])
                    if "placement_hypothesis" in a
                    else None,
                    alternatives=tuple(json.loads(_text(a["placement_alternatives"])))
                    if "placement_alternatives" in a
                    else (),
                )
            )
        if not out:
            raise BundleError(f"{self.path}: no tensor {TensorKey(*identity).path}")
        return out

    def merged(self, identity: Identity) -> np.ndarray:
        """The logical tensor, rebuilt per the placement semantics (float64)."""
        shards = self.shards(identity)
        name = TensorKey(*identity).path
        first = shards[0]
        for s in shards[1:]:
            for attr in ("global_shape", "combine", "dtype"):
                if getattr(s, attr) != getattr(first, attr):
                    raise BundleError(
                        f"{name}: rank {s.rank} {attr} {getattr(s, attr)} differs from rank "
                        f"{first.rank}'s {getattr(first, attr)}"
                    )
        shape = first.global_shape
        if first.combine == "sum":
            groups: dict[int, list[Shard]] = {}
            for s in shards:
                groups.setdefault(s.partial_index if s.partial_index is not None else s.rank, [])
                groups[s.partial_index if s.partial_index is not None else s.rank].append(s)
            total = np.zeros(shape)
            covered = np.zeros(shape, dtype=bool)
            for part in groups.values():
                value, count = self._assemble(part, shape, name, replica=True)
                total += value
                covered |= count > 0
            self._check_holes(covered, name)
            return total
        value, count = self._assemble(shards, shape, name, replica=first.combine == "replica")
        if first.combine == "copy" and (count > 1).any():
            where = tuple(int(i) for i in np.argwhere(count > 1)[0])
            raise BundleError(f"{name}: shards overlap under 'copy' at index {where}")
        self._check_holes(count > 0, name)
        return value

    @staticmethod
    def _check_holes(covered: np.ndarray, name: str) -> None:
        if not covered.all():
            where = tuple(int(i) for i in np.argwhere(~covered)[0])
            raise BundleError(f"{name}: hole: index {where} is covered by no shard")

    def _assemble(
        self, shards: list[Shard], shape: tuple[int, ...], name: str, replica: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        value = np.zeros(shape)
        count = np.zeros(shape, dtype=np.int32)
        owner = np.full(shape, -1, dtype=np.int64)
        flat_value, flat_count, flat_owner = value.reshape(-1), count.reshape(-1), owner.reshape(-1)
        for s in shards:  # rank order: the lowest rank's value wins among replicas
            for dst, src in self._regions(s, shape, name):
                if s.layout == "flat":
                    v, c, o = flat_value[dst], flat_count[dst], flat_owner[dst]
                else:
                    v, c, o = value[dst], count[dst], owner[dst]
                incoming = src
                seen = c > 0
                if replica and seen.any():
                    a, b = v[seen], incoming[seen]
                    bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
                    if bad.any():
                        other = int(o[seen][bad][0])
                        raise BundleError(
                            f"{name}: replicas disagree: rank {s.rank} and rank {other} "
                            f"({int(bad.sum())} elements, e.g. {b[bad][0]!r} vs {a[bad][0]!r})"
                        )
                new_v = np.where(seen, v, incoming)
                new_o = np.where(seen, o, s.rank)
                if s.layout == "flat":
                    flat_value[dst], flat_owner[dst] = new_v, new_o
                    flat_count[dst] = c + 1
                else:
                    value[dst], owner[dst] = new_v, new_o
                    count[dst] = c + 1
        return value, count

    def _regions(self, s: Shard, shape: tuple[int, ...], name: str):
        local = s.data
        if s.layout == "boxes":
            nd = len(shape)
            for box in s.boxes.reshape(-1, 3 * nd):
                spans = box.reshape(nd, 3)
                for d, (ls, gs, n) in enumerate(spans):
                    if ls + n > local.shape[d] or gs + n > shape[d]:
                        raise BundleError(
                            f"{name}: rank {s.rank}: box dim {d} {tuple(spans[d])} outside local "
                            f"{local.shape} or global {shape}"
                        )
                dst = tuple(slice(int(gs), int(gs + n)) for _, gs, n in spans)
                src = tuple(slice(int(ls), int(ls + n)) for ls, _, n in spans)
                yield dst, local[src]
        elif s.layout == "flat":
            flat = local.reshape(-1)
            for lo, go, n in s.flat_ranges.reshape(-1, 3):
                if lo + n > flat.size or go + n > math.prod(shape):
                    raise BundleError(
                        f"{name}: rank {s.rank}: flat range {(lo, go, n)} out of bounds"
                    )
                yield slice(int(go), int(go + n)), flat[int(lo) : int(lo + n)]
        else:
            raise BundleError(f"{name}: rank {s.rank}: unknown placement {s.layout!r}")

    # --- validation -------------------------------------------------------------------------

    def validate(self, merge: bool = True) -> list[str]:
        """Every problem found (empty when the bundle is sound): rank files present and
        consistent with the manifest, tensor counts and bytes, and (with `merge`) every
        logical tensor merges without holes, overlaps or disagreeing replicas."""
        problems: list[str] = []
        listed = sorted(int(r["rank"]) for r in self.manifest["ranks"])
        if listed != list(range(self.world_size)):
            problems.append(f"manifest ranks {listed} are not 0..{self.world_size - 1}")
        for rec in self.manifest["ranks"]:
            rank = int(rec["rank"])
            try:
                f = self._open(rank)
                a = f.attrs
                for attr, want in (
                    ("format", FORMAT),
                    ("format_version", int(self.manifest["format_version"])),
                    ("rank", rank),
                    ("world_size", self.world_size),
                    ("role", self.manifest["role"]),
                ):
                    got = _text(a[attr]) if isinstance(want, str) else int(a[attr])
                    if got != want:
                        problems.append(f"rank {rank}: attribute {attr} is {got}, not {want}")
                sets = list(self._datasets(f))
                nbytes = sum(d.nbytes for _, d in sets)
                if len(sets) != int(rec["tensors"]):
                    problems.append(
                        f"rank {rank}: {len(sets)} tensors, manifest says {rec['tensors']}"
                    )
                if nbytes != int(rec["bytes"]):
                    problems.append(f"rank {rank}: {nbytes} bytes, manifest says {rec['bytes']}")
                variants = set(self.manifest["variants"])
                for path, _ in sets:
                    if TensorKey.from_path(path).variant not in variants:
                        problems.append(f"rank {rank}: {path}: variant not in manifest")
            except BundleError as exc:
                problems.append(str(exc))
        if merge and not problems:
            for identity in self.identities():
                try:
                    self.merged(identity)
                except BundleError as exc:
                    problems.append(str(exc))
        return problems


def rel_error(cand: np.ndarray, ref: np.ndarray) -> float:
    """||cand - ref||_F / ||ref||_F in float64 (the absolute norm when ref is zero)."""
    denom = float(np.linalg.norm(ref.ravel()))
    diff = float(np.linalg.norm((cand - ref).ravel()))
    return diff / denom if denom > 0 else diff


def compare_bundles(
    cand_dir: str | os.PathLike[str], ref_dir: str | os.PathLike[str], variant: str = "nominal"
) -> tuple[dict[Identity, float], list[str]]:
    """Relative error of every merged candidate tensor against the reference's `variant`,
    and every problem found (structural, merge, missing or extra tensors, shape mismatch)."""
    cand, ref = BundleReader(cand_dir), BundleReader(ref_dir)
    problems = cand.validate(merge=False) + ref.validate(merge=False)
    ref_ids = set(ref.identities())
    cand_ids = cand.identities()
    errors: dict[Identity, float] = {}
    for identity in cand_ids:
        ref_identity = (variant, *identity[1:])
        if ref_identity not in ref_ids:
            problems.append(f"candidate tensor {TensorKey(*identity).path} has no reference")
            continue
        try:
            c, r = cand.merged(identity), ref.merged(ref_identity)
        except BundleError as exc:
            problems.append(str(exc))
            continue
        if c.shape != r.shape:
            problems.append(f"{TensorKey(*identity).path}: shape {c.shape} vs reference {r.shape}")
            continue
        errors[identity] = rel_error(c, r)
    missing = sorted({i for i in ref_ids if i[0] == variant} - set(cand_ids))
    if missing:
        problems.append(
            f"{len(missing)} reference tensors missing from the candidate, e.g. "
            f"{TensorKey(*missing[0]).path}"
        )
    return errors, problems
