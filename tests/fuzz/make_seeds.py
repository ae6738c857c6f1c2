"""Write the seed corpora of the fuzz targets in tests/fuzz.

    python tests/fuzz/make_seeds.py OUTDIR

Everything is derived from the small valid fixture bundle (ttrace_testing.fixtures) and its broken
variants, plus hand-written hostile cases of the kinds issue reports describe:

- ``fuzz_manifest/``: manifest.json documents;
- ``fuzz_rank_file/``: whole rank files (HDF5 bytes);
- ``fuzz_placement/``: the placement attributes of every dataset, in the layout
  fuzz_placement.cpp reads;
- ``fuzz_rank_attributes/``: edit scripts (rank_file_edits.h) for rank 0 of ``base/``;
- ``base/``: that bundle with the size and CRC-32 dropped from its manifest, so that an edited
  rank file reaches the indexer instead of failing the checksum.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import h5py
import numpy as np

from ttrace_testing import fixtures

# Attribute names in the order rank_file_edits.cpp lists them (kNames).
NAMES = [
    "dtype",
    "variant",
    "module",
    "kind",
    "index",
    "iteration",
    "micro_batch",
    "global_shape",
    "placement",
    "combine",
    "partial_index",
    "boxes",
    "flat_ranges",
    "is_scalar",
    "layout_note",
    "annotate_hint",
    "format",
    "format_version",
    "rank",
    "world_size",
    "role",
]
SET_STRING, SET_INTS, SET_FLOAT, DELETE, RESHAPE, DUPLICATE = range(6)
INT_TYPES = {"i8": 0, "i16": 1, "i32": 2, "i64": 3, "u64": 4, "i64be": 5}
STORAGE = {"f32": 0, "f64": 1, "u16": 2, "i64": 3, "u8": 4, "i32": 5, "i16be": 6}


def write_unique(folder: Path, blobs: Iterable[tuple[str, bytes]]) -> int:
    """One file per distinct blob, named for what it is plus a short hash."""
    folder.mkdir(parents=True, exist_ok=True)
    seen: set[str] = set()
    for name, blob in blobs:
        digest = hashlib.sha1(blob).hexdigest()[:10]
        if digest not in seen:
            seen.add(digest)
            (folder / f"{name}-{digest}").write_bytes(blob)
    return len(seen)


def manifest_seeds(valid: Path, broken: Path) -> Iterable[tuple[str, bytes]]:
    text = (valid / "manifest.json").read_text(encoding="utf-8")
    yield "valid", text.encode()
    for case in sorted(p for p in broken.iterdir() if (p / "manifest.json").is_file()):
        yield case.name, (case / "manifest.json").read_bytes()
    edits = {
        "world-size-huge": lambda d: d.update(world_size=2_000_000_000),
        "world-size-zero": lambda d: d.update(world_size=0, ranks=[]),
        "world-size-float": lambda d: d.update(world_size=1e300),
        "coords-strings": lambda d: d["ranks"][0].update(coords={"tp": "0", "dp": [1]}),
        "modules-object": lambda d: d.update(modules={"a": 1}),
        "depth-huge": lambda d: d["modules"][0].update(depth=100000),
        "negative-sizes": lambda d: d["ranks"][0].update(file_size=-5, bytes=-1, tensors=1e300),
        "crc-bad": lambda d: d["ranks"][1].update(crc32="xyz"),
        "file-escape": lambda d: d["ranks"][1].update(file="../rank-00001.h5"),
        "rank-twice": lambda d: d["ranks"][1].update(rank=0),
        "ranks-not-objects": lambda d: d.update(ranks=[1, "two", None]),
    }
    for name, edit in edits.items():
        data = json.loads(text)
        edit(data)
        yield name, json.dumps(data).encode()
    yield "not-an-object", b"[1, 2, 3]"
    yield "deep-nesting", b"[" * 5000 + b"]" * 5000
    yield "non-utf8-module", text.encode().replace(b"layers.0.norm", b"layers.\xff\xfe")


def rank_file_seeds(valid: Path, broken: Path) -> Iterable[tuple[str, bytes]]:
    yield "valid-rank0", (valid / "rank-00000.h5").read_bytes()
    yield "valid-rank1", (valid / "rank-00001.h5").read_bytes()
    for case in sorted(p for p in broken.iterdir() if (p / "rank-00001.h5").is_file()):
        yield case.name, (case / "rank-00001.h5").read_bytes()


def i64s(values: Iterable[int]) -> bytes:
    values = [int(v) for v in values]
    return struct.pack(f"<H{len(values)}q", len(values), *values)


def shape(values: Iterable[int]) -> bytes:
    values = [int(v) for v in values]
    return struct.pack(f"<B{len(values)}q", len(values), *values)


def placement_record(attrs: h5py.AttributeManager, local: tuple[int, ...]) -> bytes:
    kinds = {"boxes": 0, "flat": 1}
    combines = {"copy": 0, "sum": 1, "replica": 2}
    out = shape(attrs["global_shape"])
    out += struct.pack(
        "<BBqB",
        kinds[str(attrs["placement"])],
        combines[str(attrs["combine"])],
        int(attrs.get("partial_index", 0)),
        int(attrs.get("is_scalar", 0)),
    )
    out += shape(local)
    for name in ("boxes", "flat_ranges"):
        if name in attrs:
            rows = np.asarray(attrs[name])
            out += b"\x01" + i64s(rows.ravel())
            out += b"\x01" + struct.pack("<q", rows.shape[-1]) if rows.ndim == 2 else b"\x00"
        else:
            out += b"\x00"
    return out


def placement_seeds(bundles: Iterable[Path]) -> Iterable[tuple[str, bytes]]:
    for bundle in bundles:
        for rank_file in sorted(bundle.glob("rank-*.h5")):
            with h5py.File(rank_file, "r") as f:
                found: list[tuple[str, bytes]] = []

                def visit(name: str, obj: object, found: list[tuple[str, bytes]] = found) -> None:
                    if isinstance(obj, h5py.Dataset) and "placement" in obj.attrs:
                        found.append(("dataset", placement_record(obj.attrs, obj.shape)))

                f.visititems(visit)
                yield from found


def edit(kind: int, target: int, *fields: bytes) -> bytes:
    return bytes([kind, target]) + b"".join(fields)


def name(attribute: str) -> bytes:
    return bytes([NAMES.index(attribute)])


def string(value: str) -> bytes:
    raw = value.encode("utf-8", "surrogateescape")
    return bytes([len(raw)]) + raw


def edit_seeds(base: Path) -> Iterable[tuple[str, bytes]]:
    with h5py.File(base / "rank-00000.h5", "r") as f:
        datasets: list[str] = []
        f.visititems(lambda n, o: datasets.append(n) if isinstance(o, h5py.Dataset) else None)
    root = len(datasets)
    split = next(i for i, d in enumerate(datasets) if "mlp.fc1" in d)
    replica = next(i for i, d in enumerate(datasets) if "norm" in d)
    scalar, vlen, fixed, array = b"\x00", b"\x01", b"\x00", b"\x01\x02"  # space: array of 2
    yield "unedited", b""
    yield "unknown-dtype", edit(SET_STRING, split, name("dtype"), vlen, scalar, string("float7"))
    yield "dtype-as-array", edit(SET_STRING, split, name("dtype"), fixed, array, string("float32"))
    yield "module-as-array", edit(SET_STRING, split, name("module"), vlen, array, string("m"))
    yield "module-non-utf8", edit(SET_STRING, split, name("module"), vlen, scalar, b"\x02\xff\xfe")
    yield (
        "box-outside",
        edit(SET_INTS, replica, name("boxes"), bytes([INT_TYPES["i64"], 2, 1, 3]), i64s([0, 1, 3])),
    )
    yield (
        "box-near-2^63",
        edit(
            SET_INTS,
            split,
            name("boxes"),
            bytes([INT_TYPES["i64"], 2, 1, 6]),
            i64s([0, 2**63 - 2, 2, 0, 0, 4]),
        ),
    )
    yield (
        "global-shape-overflow",
        edit(
            SET_INTS, split, name("global_shape"), bytes([INT_TYPES["i64"], 1, 2]), i64s([2**62, 8])
        ),
    )
    yield (
        "global-shape-2d",
        edit(
            SET_INTS,
            split,
            name("global_shape"),
            bytes([INT_TYPES["i32"], 2, 2, 2]),
            i64s([4, 4, 1, 1]),
        ),
    )
    yield "iteration-float", edit(SET_FLOAT, split, name("iteration"), struct.pack("<d", 1e300))
    yield (
        "rank-mismatch",
        edit(SET_INTS, root, name("rank"), bytes([INT_TYPES["i64"], 0]), i64s([5])),
    )
    yield (
        "world-size-u64",
        edit(SET_INTS, root, name("world_size"), bytes([INT_TYPES["u64"], 0]), i64s([-1])),
    )
    yield "no-placement", edit(DELETE, split, name("placement"))
    yield (
        "flat-without-ranges",
        edit(SET_STRING, split, name("placement"), vlen, scalar, string("flat")),
    )
    yield (
        "declared-huge",
        edit(RESHAPE, split, bytes([STORAGE["f32"], 2]), struct.pack("<HHB", 60000, 60000, 0)),
    )
    yield (
        "bf16-as-i16be",
        edit(
            RESHAPE,
            datasets.index(next(d for d in datasets if "act" in d)),
            bytes([STORAGE["i16be"], 2]),
            struct.pack("<HHB", 2, 3, 1),
        ),
    )
    yield "duplicate-link", edit(DUPLICATE, split, b"\x01")
    yield "duplicate-copy", edit(DUPLICATE, replica, b"\x00")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[1])
    shutil.rmtree(out, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="ttrace-seeds-") as tmp:
        fixtures.write_broken(Path(tmp))
        valid, broken = Path(tmp) / "valid", Path(tmp) / "broken"
        fixtures.write_roundtrip(Path(tmp))
        counts = {
            "fuzz_manifest": write_unique(out / "fuzz_manifest", manifest_seeds(valid, broken)),
            "fuzz_rank_file": write_unique(out / "fuzz_rank_file", rank_file_seeds(valid, broken)),
            "fuzz_placement": write_unique(
                out / "fuzz_placement", placement_seeds([valid, Path(tmp) / "roundtrip"])
            ),
        }
        shutil.copytree(valid, out / "base")
    manifest = json.loads((out / "base" / "manifest.json").read_text(encoding="utf-8"))
    for entry in manifest["ranks"]:
        entry.pop("file_size", None)
        entry.pop("crc32", None)
    (out / "base" / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    counts["fuzz_rank_attributes"] = write_unique(
        out / "fuzz_rank_attributes", edit_seeds(out / "base")
    )
    for target, count in counts.items():
        print(f"{target}: {count} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
