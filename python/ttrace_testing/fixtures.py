"""Write the bundle fixtures that the C++ reader's tests load.

    python -m ttrace_testing.fixtures OUTDIR

- ``OUTDIR/roundtrip/``: a 4-rank candidate bundle with one tensor for every dtype and
  every placement (full box, split on dim 0 and on dim 1, context-parallel two-chunk, flat
  ranges, replica, sum with replicated partials, scalar). Values include zeros, -0.0,
  negatives, subnormals, the dtype's extremes, infinities and NaN where the dtype has them.
- ``OUTDIR/roundtrip-expected.h5``: for every tensor, at its bundle path, the full logical
  tensor as float64 (attribute ``dtype``); copy and replica tensors also get ``<path>__bits``,
  the full tensor in the bundle's storage type. Sums are chosen so that float64 adds them
  exactly, in any order, and never produce -0.0.
- ``OUTDIR/valid/``: a small valid 2-rank bundle; ``OUTDIR/broken/<case>/`` is a copy of
  it with exactly one defect, and ``OUTDIR/broken/EXPECTED.txt`` lists
  ``case<TAB>substring the reader's error must contain``.

Numpy and h5py only: the C++ build can run this without torch.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ttrace.bundle import BundleWriter, DType, Placement, RankRecord, TensorKey, write_manifest
from ttrace.bundle.checksum import file_checksum

DTYPES = tuple(DType.BY_NAME)
WORLD = 4

# Bit patterns of the low-precision types' special values (see docs/bundle-format.md).
_RAW_SPECIALS: dict[str, list[int]] = {
    # 0, -0, min subnormal (+-), min normal, max, -max, NaN, +-inf, 1, -1
    "bfloat16": [
        0x0000,
        0x8000,
        0x0001,
        0x8001,
        0x0080,
        0x7F7F,
        0xFF7F,
        0x7FC0,
        0x7F80,
        0xFF80,
        0x3F80,
        0xBF80,
    ],
    # no infinities; 0x7f / 0xff are the NaNs; max 448
    "float8_e4m3fn": [0x00, 0x80, 0x01, 0x81, 0x08, 0x7E, 0xFE, 0x7F, 0xFF, 0x38, 0xB8],
    # IEEE-like: 0x7c inf, 0x7d..0x7f NaN; max 57344
    "float8_e5m2": [0x00, 0x80, 0x01, 0x81, 0x04, 0x7B, 0xFB, 0x7E, 0x7C, 0xFC, 0x3C, 0xBC],
}


def _float_specials(np_type: type[np.floating]) -> list[float]:
    info = np.finfo(np_type)
    sub = float(info.smallest_subnormal)
    return [
        0.0,
        -0.0,
        sub,
        -sub,
        float(info.smallest_normal),
        float(info.max),
        float(-info.max),
        math.nan,
        math.inf,
        -math.inf,
        1.0,
        -1.0,
    ]


def special_storage(dtype: DType) -> np.ndarray:
    """The dtype's interesting values, in its storage type."""
    if dtype.name in _RAW_SPECIALS:
        return np.asarray(_RAW_SPECIALS[dtype.name], dtype=dtype.storage)
    if dtype.name in ("float64", "float32", "float16"):
        np_types: dict[str, type[np.floating[Any]]] = {
            "float64": np.float64,
            "float32": np.float32,
            "float16": np.float16,
        }
        np_type = np_types[dtype.name]
        return dtype.encode_numpy(np.asarray(_float_specials(np_type), dtype=np_type))
    if dtype.name == "bool":
        return np.asarray([0, 1], dtype=dtype.storage)
    info = np.iinfo(dtype.storage)
    values = [0, 1, info.max, info.min, info.max - 1]
    if info.min < 0:
        values += [-1, min(info.max, 2**53), max(info.min, -(2**53))]
    return np.asarray(values, dtype=dtype.storage)


def round_to(dtype: DType, values: np.ndarray) -> np.ndarray:
    """Storage of the dtype value nearest each float64 value (finite, moderate values only)."""
    if dtype.name == "bfloat16":
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        return rounded.astype(dtype.storage)
    if dtype.name.startswith("float8"):
        table = dtype.decode(np.arange(256, dtype=np.uint8))
        finite = np.where(np.isfinite(table), table, np.inf)
        nearest: np.ndarray = np.abs(values[:, None] - finite[None, :]).argmin(axis=1)
        return nearest.astype(dtype.storage)
    if dtype.name == "float16":
        return dtype.encode_numpy(values.astype(np.float16))
    return values.astype(dtype.storage)


def make_storage(dtype: DType, shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """A tensor that starts with the specials and continues with random values."""
    count = math.prod(shape)
    if dtype.is_float:
        rest = round_to(dtype, rng.uniform(-4.0, 4.0, size=count))
    elif dtype.name == "bool":
        rest = rng.integers(0, 2, size=count).astype(dtype.storage)
    else:
        low = max(np.iinfo(dtype.storage).min, -1000)
        rest = rng.integers(low, 1000, size=count).astype(dtype.storage)
    specials = special_storage(dtype)
    values = np.concatenate([specials, rest])[:count]
    return np.ascontiguousarray(values.reshape(tuple(shape)))


def second_partial(dtype: DType, first: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A partial whose float64 sum with ``first`` is exact, in range, and never -0.0."""
    a = dtype.decode(first).ravel()
    if dtype.is_float:
        candidates = rng.choice([0.0, 1.0, -1.0, 0.5, -2.0, 3.0], size=a.size)
        b_storage = round_to(dtype, candidates)
    elif dtype.name == "bool":
        b_storage = np.where(a == 0, rng.integers(0, 2, size=a.size), 0).astype(dtype.storage)
    else:
        b_storage = rng.integers(-3 if np.iinfo(dtype.storage).min < 0 else 0, 4, size=a.size)
        b_storage = b_storage.astype(dtype.storage)
    b = dtype.decode(b_storage)
    zero = round_to(dtype, np.zeros(1))[0] if dtype.is_float else dtype.storage.type(0)
    for i in range(a.size):
        if not np.isfinite(a[i]):
            continue  # NaN/inf plus a finite number is the same in any order
        total = a[i] + b[i]
        exact = np.isfinite(total) and Fraction(a[i]) + Fraction(b[i]) == Fraction(total)
        if not dtype.is_float:
            info = np.iinfo(dtype.storage) if dtype.name != "bool" else np.iinfo(np.uint8)
            upper = 1 if dtype.name == "bool" else info.max
            exact = exact and info.min <= total <= upper and abs(total) < 2**53
        if not exact:
            b_storage[i] = zero
    return b_storage.reshape(first.shape)


def local_shard(full: np.ndarray, placement: Placement, pad: np.generic) -> np.ndarray:
    """Cut a rank's local tensor out of the full tensor, as the placement describes it."""
    if placement.layout == "flat":
        length = max(lo + n for lo, _, n in placement.flat_ranges)
        local = np.full(length, pad, dtype=full.dtype)
        flat = full.reshape(-1)
        for lo, go, n in placement.flat_ranges:
            local[lo : lo + n] = flat[go : go + n]
        return local
    local = np.full(placement.local_shape(), pad, dtype=full.dtype)
    for box in placement.box_spans:
        local[tuple(slice(ls, ls + n) for ls, _, n in box)] = full[
            tuple(slice(gs, gs + n) for _, gs, n in box)
        ]
    return local


def _flat_ranges(rank: int) -> list[tuple[int, int, int]]:
    # 35 elements of a (5, 7) tensor; rank 0 has a padding element first, rank 1 two ranges.
    return [
        [(1, 0, 8)],
        [(0, 8, 5), (5, 20, 4)],
        [(0, 13, 7)],
        [(0, 24, 11)],
    ][rank]


# Each placement case: (name, global shape, rank -> placement or None, key maker).
PlacementCase = tuple[str, tuple[int, ...], Callable[[int], Placement | None]]
PLACEMENTS: list[PlacementCase] = [
    ("full", (7, 3), lambda r: Placement.full((7, 3)) if r == 0 else None),
    ("split0", (8, 6), lambda r: Placement.split((8, 6), 0, r, WORLD)),
    ("split1", (5, 8), lambda r: Placement.split((5, 8), 1, r, WORLD)),
    ("cp", (16, 3), lambda r: Placement.cp_two_chunk((16, 3), 0, r, WORLD)),
    ("flat", (5, 7), lambda r: Placement.flat((5, 7), _flat_ranges(r))),
    ("replica", (4, 6), lambda r: Placement.split((4, 6), 0, r % 2, 2, combine="replica")),
    ("sum", (3, 5), lambda r: Placement.full((3, 5)).with_partial(r % 2)),
    ("scalar", (), lambda r: Placement.full((), combine="replica")),
]


def _key(case: str, dtype: str) -> TensorKey:
    module = f"{case}.{dtype}"
    if case == "flat":
        return TensorKey("nominal", 0, -1, module, "optimizer_state", "exp_avg.weight")
    if case == "scalar":
        return TensorKey("nominal", 1, 1, module, "forward_output", "0")
    return TensorKey("nominal", 0, 0, module, "forward_output", "0")


def _as_input(dtype: DType, storage: np.ndarray) -> np.ndarray:
    """What a caller hands BundleWriter.write for this storage (bool as bool)."""
    return storage.astype(np.bool_) if dtype.name == "bool" else storage


def write_roundtrip(outdir: Path) -> None:
    bundle = outdir / "roundtrip"
    shutil.rmtree(bundle, ignore_errors=True)
    rng = np.random.default_rng(20261120)
    writers = [
        BundleWriter(
            bundle, rank=r, world_size=WORLD, role="candidate", coords={"tp": r % 2, "dp": r // 2}
        )
        for r in range(WORLD)
    ]
    modules: list[dict[str, object]] = []
    with h5py.File(outdir / "roundtrip-expected.h5", "w", libver=("earliest", "v110")) as expected:
        expected.attrs["bundle"] = "roundtrip"
        for case, shape, placement_of in PLACEMENTS:
            for name in DTYPES:
                dtype = DType.from_name(name)
                key = _key(case, name)
                modules.append(
                    {"name": key.module, "order": len(modules), "depth": 0, "type": "Fixture"}
                )
                if case == "scalar":
                    specials = special_storage(dtype)  # -max for floats, min for ints, True
                    full = specials[[min(6 if dtype.is_float else 3, len(specials) - 1)]]
                else:
                    full = make_storage(dtype, shape, rng)
                partials = [full, second_partial(dtype, full, rng)] if case == "sum" else [full]
                pad = special_storage(dtype)[-1]
                combine = "copy"
                for rank, writer in enumerate(writers):
                    placement = placement_of(rank)
                    if placement is None:
                        continue
                    combine = placement.combine
                    source = partials[placement.partial_index or 0]
                    local = local_shard(source, placement, pad)
                    if case == "scalar":
                        local = local.reshape(())
                    writer.write(key, _as_input(dtype, local), placement, dtype=name)
                # Not sum(): its integer 0 start would turn -0.0 into +0.0.
                value = dtype.decode(partials[0])
                for partial in partials[1:]:
                    value = value + dtype.decode(partial)
                dataset = expected.create_dataset(key.path, data=np.asarray(value, np.float64))
                dataset.attrs["dtype"] = name
                dataset.attrs["combine"] = combine
                if case != "sum":
                    bits = expected.create_dataset(key.path + "__bits", data=full)
                    bits.attrs["dtype"] = name
        expected.attrs["tensors"] = np.int64(len(modules))
    records = [w.close() for w in writers]
    write_manifest(
        bundle,
        role="candidate",
        world_size=WORLD,
        parallel={"tp": 2, "dp": 2},
        precision="fp32",
        variants=["nominal"],
        modules=modules,
        iterations=[0, 1],
        micro_batches=2,
        ranks=records,
        model="ttrace.fixtures roundtrip: every dtype x every placement",
    )


# --- broken bundles -------------------------------------------------------------------------

SPLIT = TensorKey("nominal", 0, 0, "layers.0.mlp.fc1", "forward_output", "0")
REPLICA = TensorKey("nominal", 0, -1, "layers.0.norm", "parameter", "weight")
HALF = TensorKey("nominal", 0, 0, "layers.0.mlp.act", "forward_output", "0")
LOSS = TensorKey("nominal", 0, 0, "loss", "forward_output", "0")

# case -> substring the reader's error must contain (docs/bundle-format.md, "Errors").
BROKEN_CASES: dict[str, str] = {
    "missing-rank-file": "rank-00001.h5",
    "truncated-file": "rank-00001.h5",
    "not-hdf5": "not an HDF5 file",
    "bad-version": "format_version 99",
    "bad-manifest-json": "manifest.json",
    "missing-manifest": "manifest.json",
    "box-outside-shape": "outside",
    "holes": "hole",
    "overlap-copy": "overlap",
    "replica-disagree": "disagree",
    "unknown-dtype": "float7",
    "tensor-count-mismatch": "tensors",
    "rank-attr-mismatch": "rank",
    "corrupt-bytes": "CRC-32",
}

# Defects a buggy writer could have produced: the file is rewritten with the defect and the
# manifest records its real size and CRC-32, so the reader must find the defect inside the
# file. The other cases are damage in copying: the manifest still describes the good file.
WRITTEN_DEFECTS = {
    "box-outside-shape",
    "holes",
    "overlap-copy",
    "replica-disagree",
    "unknown-dtype",
    "rank-attr-mismatch",
}


def write_small_valid(bundle: Path) -> list[RankRecord]:
    """Two ranks: a copy split, a replica (constant, so shifting it changes nothing but
    its box), a bfloat16 tensor on rank 0 only, and a scalar sum."""
    shutil.rmtree(bundle, ignore_errors=True)
    split = np.arange(16, dtype=np.float32).reshape(4, 4) - 3.5
    records = []
    for rank in range(2):
        with BundleWriter(
            bundle, rank=rank, world_size=2, role="candidate", coords={"tp": rank}
        ) as writer:
            writer.write(SPLIT, split[2 * rank : 2 * rank + 2], Placement.split((4, 4), 0, rank, 2))
            writer.write(REPLICA, np.full(3, 2.5, np.float32), Placement.full((3,), "replica"))
            if rank == 0:
                bits = np.asarray([[0x3F80, 0xC000, 0x0000], [0x8000, 0x7F7F, 0x0001]], np.uint16)
                writer.write(HALF, bits, dtype="bfloat16")
            writer.write(LOSS, np.float32(0.25 * (rank + 1)), Placement.full(()).with_partial(rank))
        records.append(writer.close())
    write_manifest(
        bundle,
        role="candidate",
        world_size=2,
        parallel={"tp": 2},
        precision="fp32",
        variants=["nominal"],
        modules=[
            {"name": name, "order": i, "depth": 0, "type": "Fixture"}
            for i, name in enumerate(
                ("layers.0.norm", "layers.0.mlp.fc1", "layers.0.mlp.act", "loss")
            )
        ],
        iterations=[0],
        micro_batches=1,
        ranks=records,
        model="ttrace.fixtures small valid bundle",
    )
    return records


def _edit_manifest(bundle: Path, edit: Callable[[dict[str, object]], None]) -> None:
    path = bundle / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def _rank_entry(data: dict[str, object], rank: int) -> dict[str, int]:
    ranks = data["ranks"]
    assert isinstance(ranks, list)
    entry: dict[str, int] = ranks[rank]
    return entry


def _delete_dataset(file: h5py.File, path: str) -> None:
    """Delete a dataset and the groups it leaves empty, so no trace of it remains."""
    del file[path]
    parent = path.rsplit("/", 1)[0]
    while parent and not len(file[parent]):
        del file[parent]
        parent = parent.rsplit("/", 1)[0]


def _refresh_checksum(bundle: Path, rank: int) -> None:
    size, crc = file_checksum(bundle / f"rank-{rank:05d}.h5")
    _edit_manifest(bundle, lambda d: _rank_entry(d, rank).update(file_size=size, crc32=crc))


def _largest_raw_data(path: Path) -> tuple[int, int]:
    """(file offset, bytes) of the largest contiguous dataset's stored values."""
    spans: list[tuple[int, int]] = []

    def visit(_name: str, obj: Any) -> None:
        if isinstance(obj, h5py.Dataset) and obj.id.get_offset() is not None:
            spans.append((obj.id.get_storage_size(), obj.id.get_offset()))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    size, offset = max(spans)
    if size < 8:
        raise ValueError(f"{path}: no tensor of 8 bytes or more to corrupt")
    return offset, size


def _break(case: str, bundle: Path) -> None:
    rank1 = bundle / "rank-00001.h5"
    if case == "missing-rank-file":
        rank1.unlink()
    elif case == "truncated-file":
        data = rank1.read_bytes()
        rank1.write_bytes(data[: len(data) // 2])
    elif case == "not-hdf5":
        rank1.write_text("this is a text file, not an HDF5 file\n", encoding="utf-8")
    elif case == "bad-version":
        _edit_manifest(bundle, lambda d: d.update(format_version=99))
    elif case == "bad-manifest-json":
        text = (bundle / "manifest.json").read_text(encoding="utf-8")
        (bundle / "manifest.json").write_text(text[: len(text) // 2], encoding="utf-8")
    elif case == "missing-manifest":
        (bundle / "manifest.json").unlink()
    elif case == "box-outside-shape":
        with h5py.File(rank1, "r+") as f:
            f[REPLICA.path].attrs["boxes"] = np.asarray([[0, 1, 3]], dtype=np.int64)
    elif case == "holes":
        with h5py.File(rank1, "r+") as f:
            nbytes = f[SPLIT.path].nbytes
            _delete_dataset(f, SPLIT.path)

        def drop(d: dict[str, object]) -> None:
            entry = _rank_entry(d, 1)
            entry["tensors"] -= 1
            entry["bytes"] -= nbytes

        _edit_manifest(bundle, drop)
    elif case == "overlap-copy":
        # Rank 1 claims rows 1..3 instead of 2..3: row 1 is covered twice, nothing is missing.
        with h5py.File(rank1, "r+") as f:
            old = f[SPLIT.path]
            attrs = dict(old.attrs)
            rows = np.arange(16, dtype=np.float32).reshape(4, 4)[1:] - 3.5
            del f[SPLIT.path]
            new = f.create_dataset(SPLIT.path, data=rows)
            for name, value in attrs.items():
                new.attrs[name] = value
            new.attrs["boxes"] = np.asarray([[0, 1, 3, 0, 0, 4]], dtype=np.int64)

        _edit_manifest(
            bundle, lambda d: _rank_entry(d, 1).update(bytes=_rank_entry(d, 1)["bytes"] + 16)
        )
    elif case == "replica-disagree":
        with h5py.File(rank1, "r+") as f:
            f[REPLICA.path][1] = np.float32(3.5)
    elif case == "unknown-dtype":
        with h5py.File(rank1, "r+") as f:
            f[SPLIT.path].attrs["dtype"] = "float7"
    elif case == "tensor-count-mismatch":
        _edit_manifest(
            bundle, lambda d: _rank_entry(d, 1).update(tensors=_rank_entry(d, 1)["tensors"] + 1)
        )
    elif case == "rank-attr-mismatch":
        with h5py.File(rank1, "r+") as f:
            f.attrs["rank"] = np.int64(5)
    elif case == "corrupt-bytes":
        # Same size, 8 bytes of a tensor's stored values changed: only the file's checksum
        # can tell. (The values, not the file's middle: HDF5's object headers carry their
        # own checksums, so damaged metadata is a different defect.)
        offset, size = _largest_raw_data(rank1)
        data = bytearray(rank1.read_bytes())
        for i in range(8):
            data[offset + i * (size // 8)] ^= 0x5A
        rank1.write_bytes(bytes(data))
    else:
        raise ValueError(f"unknown broken case {case!r}")
    if case in WRITTEN_DEFECTS:
        _refresh_checksum(bundle, 1)


def write_valid_reference(valid: Path, target: Path) -> None:
    """``valid`` relabelled as a reference (manifest and rank files), so that readers given a
    (reference, candidate) pair of the small bundle get a real pair, not one bundle twice."""
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(valid, target)
    _edit_manifest(target, lambda d: d.update(role="reference"))
    for rank in range(2):
        with h5py.File(target / f"rank-{rank:05d}.h5", "r+") as f:
            f.attrs["role"] = "reference"
        _refresh_checksum(target, rank)


def write_broken(outdir: Path) -> None:
    valid = outdir / "valid"
    write_small_valid(valid)
    write_valid_reference(valid, outdir / "valid-reference")
    broken = outdir / "broken"
    shutil.rmtree(broken, ignore_errors=True)
    broken.mkdir(parents=True)
    for case in BROKEN_CASES:
        shutil.copytree(valid, broken / case)
        _break(case, broken / case)
    lines = "".join(f"{case}\t{needle}\n" for case, needle in BROKEN_CASES.items())
    (broken / "EXPECTED.txt").write_text(lines, encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ttrace_testing.fixtures", description=__doc__.split("\n")[0]
    )
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    outdir: Path = args.outdir
    outdir.mkdir(parents=True, exist_ok=True)
    write_roundtrip(outdir)
    print(f"{outdir / 'roundtrip'}: {WORLD} ranks, {len(PLACEMENTS) * len(DTYPES)} tensors")
    print(f"{outdir / 'roundtrip-expected.h5'}: expected float64 values and raw bits")
    write_broken(outdir)
    print(f"{outdir / 'valid'}: small valid 2-rank bundle")
    print(f"{outdir / 'broken'}: {len(BROKEN_CASES)} broken bundles, see EXPECTED.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
