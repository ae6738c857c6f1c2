"""Hostile-bundle catalogue: small broken bundle pairs derived from one tiny valid pair.

    python tests/hostile/make_catalogue.py OUTDIR

writes OUTDIR/<case>/{reference,candidate} and OUTDIR/CATALOGUE.json, one entry per case:
the arguments to give `ttrace diff` and the explorer (`ref`, `cand`, relative to the case),
the bundle `validate` checks, and what every front end must answer: the exit status, the
typed diagnostic code (`ttrace diff --json`) and a phrase of the message on stderr.

Each case is one thing a hostile or unlucky user hands the tools: bundles half-copied from a
cluster, written by another version, edited by hand, or given in the wrong order.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from base_pair import FC1, FC2, WEIGHT, write_candidate, write_reference

from ttrace.bundle.checksum import file_checksum

RANK0 = "rank-00000.h5"
RANK1 = "rank-00001.h5"


@dataclass(frozen=True)
class Expect:
    """What `validate`, `diff` and the explorer must all answer for one case."""

    exit: int  # 2: invalid input; 1: a finding (the data is unusual); 0: clean
    code: str  # typed diagnostic code in `ttrace diff --json`, "" when none is expected
    phrase: str  # part of the message on stderr (names the file, rank or tensor)
    validate_exit: int | None = None  # validate sees one bundle: differs for findings/pairs


@dataclass
class Case:
    name: str
    what: str
    expect: Expect
    ref: str = "reference"
    cand: str = "candidate"
    validate: str = "candidate"
    extra: dict[str, Any] = field(default_factory=dict)


Breaker = Callable[[Path], None]
CASES: list[tuple[Case, Breaker]] = []


def case(name: str, what: str, expect: Expect, **kw: Any) -> Callable[[Breaker], Breaker]:
    def register(fn: Breaker) -> Breaker:
        CASES.append((Case(name, what, expect, **kw), fn))
        return fn

    return register


# --- helpers -----------------------------------------------------------------------------


def manifest(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    return data


def save_manifest(bundle: Path, data: dict[str, Any]) -> None:
    (bundle / "manifest.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def edit(bundle: Path, fn: Callable[[dict[str, Any]], None]) -> None:
    data = manifest(bundle)
    fn(data)
    save_manifest(bundle, data)


def refresh(bundle: Path, rank: int) -> None:
    """Records the rank file's new size and CRC, so only the edited content is wrong."""
    size, crc = file_checksum(bundle / f"rank-{rank:05d}.h5")

    def update(d: dict[str, Any]) -> None:
        entry = next(e for e in d["ranks"] if e["rank"] == rank)
        entry.update(file_size=size, crc32=crc)

    edit(bundle, update)


def h5edit(bundle: Path, rank: int, fn: Callable[[h5py.File], None]) -> None:
    with h5py.File(bundle / f"rank-{rank:05d}.h5", "r+") as f:
        fn(f)
    refresh(bundle, rank)


def replace_dataset(f: h5py.File, path: str, data: Any, **kw: Any) -> h5py.Dataset:
    attrs = dict(f[path].attrs)
    del f[path]
    new = f.create_dataset(path, data=data, **kw)
    for k, v in attrs.items():
        new.attrs[k] = v
    return new


def set_bytes_recorded(bundle: Path, rank: int, delta: int) -> None:
    def update(d: dict[str, Any]) -> None:
        entry = next(e for e in d["ranks"] if e["rank"] == rank)
        entry["bytes"] += delta

    edit(bundle, update)


C = "candidate"
R = "reference"


# --- manifest: numbers and types --------------------------------------------------------


@case(
    "world-size-2e9",
    "world_size 2e9 with two ranks listed",
    Expect(2, "implausible-world-size", "world_size"),
)
def _(d: Path) -> None:
    edit(d / C, lambda m: m.update(world_size=2_000_000_000))


@case(
    "world-size-0", "world_size 0 and no ranks", Expect(2, "implausible-world-size", "world_size")
)
def _(d: Path) -> None:
    edit(d / C, lambda m: m.update(world_size=0, ranks=[]))


@case("world-size-1e300", "world_size 1e300 (a float)", Expect(2, "manifest-field", "world_size"))
def _(d: Path) -> None:
    text = (d / C / "manifest.json").read_text(encoding="utf-8")
    text = text.replace('"world_size": 2', '"world_size": 1e300', 1)
    (d / C / "manifest.json").write_text(text, encoding="utf-8")


@case("world-size-string", 'world_size "2"', Expect(2, "manifest-field", "world_size"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m.update(world_size="2"))


@case("coords-strings", "rank coords given as strings", Expect(2, "manifest-field", "coords"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][1]["coords"].update(tp="1"))


@case("coords-not-object", "rank coords given as a list", Expect(2, "manifest-field", "coords"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][1].update(coords=[0, 1]))


@case("tensors-1e300", "a rank's tensor count 1e300", Expect(2, "manifest-field", "tensors"))
def _(d: Path) -> None:
    text = (d / C / "manifest.json").read_text(encoding="utf-8")
    text = text.replace('"tensors": 5', '"tensors": 1e300', 1)
    (d / C / "manifest.json").write_text(text, encoding="utf-8")


@case("negative-file-size", "file_size -5", Expect(2, "manifest-field", "file_size"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][0].update(file_size=-5))


@case("negative-bytes", "bytes -100", Expect(2, "manifest-field", "bytes"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][1].update(bytes=-100))


@case("rank-huge", "a rank number beyond int", Expect(2, "manifest-field", "rank"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][1].update(rank=2**40))


@case("micro-batches-huge", "micro_batches 1e12", Expect(2, "manifest-field", "micro_batches"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m.update(micro_batches=10**12))


@case(
    "depth-100000",
    "reference modules claim depth 100000 (would make tolerances infinite)",
    Expect(2, "implausible-depth", "depth 100000"),
    validate="reference",
)
def _(d: Path) -> None:
    edit(d / R, lambda m: m["modules"][2].update(depth=100000))


@case("depth-negative", "a module depth of -3", Expect(2, "implausible-depth", "depth -3"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["modules"][1].update(depth=-3))


@case("modules-object", "modules is an object", Expect(2, "manifest-field", "modules"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m.update(modules={"embed": 1}))


@case("modules-empty", "modules is empty", Expect(2, "missing-modules", "modules"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m.update(modules=[]))


@case(
    "module-entry-number", "a modules entry is a number", Expect(2, "manifest-field", "modules[1]")
)
def _(d: Path) -> None:
    edit(d / C, lambda m: m["modules"].__setitem__(1, 42))


@case(
    "parallel-product",
    "tp*pp*dp*cp is not world_size",
    Expect(2, "parallel-mismatch", "world_size"),
)
def _(d: Path) -> None:
    edit(d / C, lambda m: m["parallel"].update(tp=4))


@case("parallel-negative", "a parallel size of -2", Expect(2, "manifest-field", "parallel"))
def _(d: Path) -> None:
    edit(d / C, lambda m: m["parallel"].update(dp=-2))


@case(
    "coords-disagree-file",
    "manifest coords differ from the rank file's",
    Expect(2, "coords-mismatch", "rank 1"),
)
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][1]["coords"].update(tp=0, dp=1))
    edit(d / C, lambda m: m["parallel"].update(tp=1, dp=2))


@case(
    "coords-out-of-range",
    "a tp coordinate beyond the tp size",
    Expect(2, "coords-mismatch", "rank 1"),
)
def _(d: Path) -> None:
    edit(d / C, lambda m: m["ranks"][1]["coords"].update(tp=7))
    h5edit(d / C, 1, lambda f: f.attrs.__setitem__("coord_tp", np.int64(7)))


@case(
    "manifest-deep-json",
    "manifest.json nested 100000 levels deep",
    Expect(2, "bad-manifest", "manifest.json"),
)
def _(d: Path) -> None:
    (d / C / "manifest.json").write_text("[" * 100000 + "]" * 100000, encoding="utf-8")


@case(
    "manifest-not-utf8",
    "manifest.json with a non-UTF-8 module name",
    Expect(2, "bad-manifest", "manifest.json"),
)
def _(d: Path) -> None:
    raw = (d / C / "manifest.json").read_bytes().replace(b'"embed"', b'"emb\xffed"', 1)
    (d / C / "manifest.json").write_bytes(raw)


# --- files that are not regular files ---------------------------------------------------


@case(
    "manifest-is-directory",
    "manifest.json is a directory",
    Expect(2, "not-regular-file", "manifest.json"),
)
def _(d: Path) -> None:
    (d / C / "manifest.json").unlink()
    (d / C / "manifest.json").mkdir()


@case("manifest-is-fifo", "manifest.json is a FIFO", Expect(2, "not-regular-file", "manifest.json"))
def _(d: Path) -> None:
    (d / C / "manifest.json").unlink()
    os.mkfifo(d / C / "manifest.json")


@case("rank-file-is-fifo", "a rank file is a FIFO", Expect(2, "not-regular-file", RANK1))
def _(d: Path) -> None:
    (d / C / RANK1).unlink()
    os.mkfifo(d / C / RANK1)


@case("rank-file-is-directory", "a rank file is a directory", Expect(2, "not-regular-file", RANK1))
def _(d: Path) -> None:
    (d / C / RANK1).unlink()
    (d / C / RANK1).mkdir()


@case(
    "rank-file-dev-zero", "a rank file is a link to /dev/zero", Expect(2, "not-regular-file", RANK1)
)
def _(d: Path) -> None:
    (d / C / RANK1).unlink()
    (d / C / RANK1).symlink_to("/dev/zero")


@case(
    "unlisted-rank-file",
    "an extra rank-00002.h5 the manifest does not list",
    Expect(2, "unlisted-rank-file", "rank-00002.h5"),
)
def _(d: Path) -> None:
    shutil.copyfile(d / C / RANK1, d / C / "rank-00002.h5")


# --- HDF5 content -----------------------------------------------------------------------


@case(
    "string-attr-array",
    "the module attribute is an array of strings",
    Expect(2, "bad-attribute", "module"),
)
def _(d: Path) -> None:
    h5edit(
        d / C,
        1,
        lambda f: f[FC1.path].attrs.__setitem__("module", np.array([b"layers.0.fc1", b"x" * 64])),
    )


@case(
    "string-attr-vlen-array",
    "the kind attribute is a variable-length string array",
    Expect(2, "bad-attribute", "kind"),
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        f[FC1.path].attrs.create("kind", ["forward_output", "y" * 100], dtype=h5py.string_dtype())

    h5edit(d / C, 1, fn)


@case(
    "int-attr-array", "the iteration attribute is an array", Expect(2, "bad-attribute", "iteration")
)
def _(d: Path) -> None:
    h5edit(
        d / C, 1, lambda f: f[FC1.path].attrs.__setitem__("iteration", np.arange(5, dtype=np.int64))
    )


@case(
    "dtype-attr-integer", "the dtype attribute is an integer", Expect(2, "bad-attribute", "dtype")
)
def _(d: Path) -> None:
    h5edit(d / C, 1, lambda f: f[FC1.path].attrs.__setitem__("dtype", np.int64(3)))


@case(
    "shape-larger-than-data",
    "a dataset declares 2^28 elements but stores none",
    Expect(2, "short-data", FC1.path),
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        ds = replace_dataset(f, FC1.path, None, shape=(4, 2**26), dtype=np.float32)
        ds.attrs["global_shape"] = np.array([4, 2**27], np.int64)
        ds.attrs["boxes"] = np.array([[0, 0, 4, 0, 2**26, 2**26]], np.int64)

    h5edit(d / C, 1, fn)


@case(
    "global-shape-overflow",
    "global_shape whose element count overflows int64",
    Expect(2, "bad-placement", "global_shape"),
)
def _(d: Path) -> None:
    h5edit(
        d / C,
        1,
        lambda f: f[FC1.path].attrs.__setitem__("global_shape", np.array([2**62, 2**40], np.int64)),
    )


@case(
    "global-shape-huge",
    "global_shape of 2^39 elements for a 12-element shard",
    Expect(2, "hole", "covered by no shard"),
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        f[FC1.path].attrs["global_shape"] = np.array([4, 2**37], np.int64)

    h5edit(d / C, 0, fn)
    h5edit(d / C, 1, fn)


@case("box-start-2^63", "a box start near 2^63", Expect(2, "bad-placement", FC1.path))
def _(d: Path) -> None:
    h5edit(
        d / C,
        1,
        lambda f: f[FC1.path].attrs.__setitem__(
            "boxes", np.array([[0, 0, 4, 0, 2**63 - 2, 3]], np.int64)
        ),
    )


@case("box-negative-length", "a box with a negative length", Expect(2, "bad-placement", FC1.path))
def _(d: Path) -> None:
    h5edit(
        d / C,
        1,
        lambda f: f[FC1.path].attrs.__setitem__("boxes", np.array([[0, 0, 4, 0, 3, -3]], np.int64)),
    )


@case(
    "bf16-as-int16",
    "bfloat16 bits stored as signed int16",
    Expect(2, "storage-mismatch", WEIGHT.path),
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        bits = f[WEIGHT.path][()]
        replace_dataset(f, WEIGHT.path, bits.view(np.int16))

    h5edit(d / C, 1, fn)


@case(
    "duplicate-dataset",
    "one rank file holds the same tensor twice",
    Expect(2, "duplicate-tensor", FC1.path),
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        f.copy(FC1.path, FC1.path + "_copy")

    h5edit(d / C, 1, fn)
    set_bytes_recorded(d / C, 1, 48)
    edit(d / C, lambda m: m["ranks"][1].update(tensors=m["ranks"][1]["tensors"] + 1))


@case("non-utf8-module", "a module name that is not UTF-8 (both sides)", Expect(0, "", ""))
def _(d: Path) -> None:
    bad = np.bytes_(b"layers.0.f\xffc2")

    def fn(f: h5py.File) -> None:
        for path in list(_all_datasets(f)):
            if f[path].attrs["module"] in ("layers.0.fc2", b"layers.0.fc2"):
                f[path].attrs["module"] = bad

    for side, ranks in ((R, 1), (C, 2)):
        for rank in range(ranks):
            h5edit(d / side, rank, fn)


def _all_datasets(f: h5py.File) -> list[str]:
    found: list[str] = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return found


@case(
    "corrupt-metadata-crc-ok",
    "HDF5 object headers overwritten, CRC recomputed",
    Expect(2, "damaged-file", RANK1),
)
def _(d: Path) -> None:
    path = d / C / RANK1
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(3)
    for offset in rng.integers(48, 2048, 48):
        data[int(offset)] = int(rng.integers(256))
    path.write_bytes(bytes(data))
    refresh(d / C, 1)


# Rank files found by fuzzing to crash (H5HG_read) or loop inside libhdf5 1.10 itself: the
# tools index rank files in a child process, so these are typed errors naming the file.
RANK_FILE_REGRESSIONS = Path(__file__).resolve().parents[1] / "fuzz/regressions/fuzz_rank_file"


def _libhdf5_breaker(regression: str) -> Breaker:
    def breaker(d: Path) -> None:
        shutil.copyfile(RANK_FILE_REGRESSIONS / regression, d / C / RANK1)
        refresh(d / C, 1)

    return breaker


case(
    "libhdf5-segfault",
    "a rank file whose metadata segfaults libhdf5, CRC recomputed",
    Expect(2, "index-crashed", RANK1),
)(_libhdf5_breaker("libhdf5-segv-1"))
case(
    "libhdf5-loop",
    "a rank file whose metadata sends libhdf5 into an endless loop, CRC recomputed",
    Expect(2, "index-timeout", RANK1),
    extra={"env": {"TTRACE_INDEX_TIMEOUT_S": "3"}},
)(_libhdf5_breaker("libhdf5-loop-1"))


@case(
    "nan-inf-data", "the candidate holds NaN and Inf", Expect(1, "", "divergent", validate_exit=0)
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        ds = f[FC2.path]
        values = ds[()]
        values[0, 0] = np.nan
        values[1, 1] = np.inf
        ds[...] = values

    for rank in range(2):
        h5edit(d / C, rank, fn)


# --- geometry: shards that claim the same elements ----------------------------------------


@case(
    "partial-overlap",
    "rank 1 claims columns 2..4 of a 6-wide split",
    Expect(2, "overlap", "ranks 0 and 1 overlap at 4 elements"),
)
def _(d: Path) -> None:
    h5edit(
        d / C,
        1,
        lambda f: f[FC1.path].attrs.__setitem__("boxes", np.array([[0, 0, 4, 0, 2, 3]], np.int64)),
    )


@case(
    "gap", "rank 1 claims columns 4..6 of a 7-wide tensor", Expect(2, "hole", "covered by no shard")
)
def _(d: Path) -> None:
    def fn(f: h5py.File) -> None:
        f[FC1.path].attrs["global_shape"] = np.array([4, 7], np.int64)

    h5edit(d / C, 0, fn)
    h5edit(
        d / C,
        1,
        lambda f: (
            fn(f),
            f[FC1.path].attrs.__setitem__("boxes", np.array([[0, 0, 4, 0, 4, 3]], np.int64)),
        ),
    )


@case(
    "out-of-bounds",
    "rank 1's box ends past the global shape",
    Expect(2, "placement-outside", FC1.path),
)
def _(d: Path) -> None:
    h5edit(
        d / C,
        1,
        lambda f: f[FC1.path].attrs.__setitem__("boxes", np.array([[0, 0, 4, 0, 4, 3]], np.int64)),
    )


@case(
    "identical-copies-agree", "both ranks store the whole fc2 under combine copy", Expect(0, "", "")
)
def _(d: Path) -> None:
    for rank in range(2):
        h5edit(d / C, rank, lambda f: f[FC2.path].attrs.__setitem__("combine", "copy"))


@case(
    "identical-copies-differ",
    "both ranks store the whole fc2 under combine copy, rank 1's differs",
    Expect(1, "replica-disagree", "divergent", validate_exit=0),
)
def _(d: Path) -> None:
    for rank in range(2):

        def fn(f: h5py.File, rank: int = rank) -> None:
            f[FC2.path].attrs["combine"] = "copy"
            if rank == 1:
                f[FC2.path][0, 0] = np.float32(1e6)

        h5edit(d / C, rank, fn)


# --- pairs: roles and identity ------------------------------------------------------------


@case(
    "same-bundle-twice",
    "the candidate given as both sides",
    Expect(2, "same-bundle", "same bundle", validate_exit=0),
    ref=C,
    cand=C,
)
def _(d: Path) -> None:
    pass


@case(
    "candidate-as-reference",
    "a copy of the candidate given as the reference",
    Expect(2, "role-mismatch", "candidate", validate_exit=0),
    ref="candidate-copy",
)
def _(d: Path) -> None:
    shutil.copytree(d / C, d / "candidate-copy")
    edit(d / "candidate-copy", lambda m: m.update(model="another TP2 run"))


@case(
    "swapped-roles",
    "reference and candidate given in the wrong order",
    Expect(2, "swapped-roles", "wrong order", validate_exit=0),
    ref=C,
    cand=R,
)
def _(d: Path) -> None:
    pass


@case(
    "reference-of-another-model",
    "the reference of a model with another hidden size",
    Expect(2, "different-model", "model", validate_exit=0),
)
def _(d: Path) -> None:
    write_reference(d / R, hidden=8, model="another tiny MLP")


# --- writing ------------------------------------------------------------------------------


def build(outdir: Path) -> list[Case]:
    base = outdir / "_base"
    write_reference(base / R)
    write_candidate(base / C)
    cases = []
    for c, breaker in CASES:
        target = outdir / c.name
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(base, target)
        breaker(target)
        cases.append(c)
    (outdir / "CATALOGUE.json").write_text(
        json.dumps([asdict(c) for c in cases], indent=1) + "\n", encoding="utf-8"
    )
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    cases = build(args.outdir)
    print(f"{len(cases)} hostile cases in {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
