"""The C++ reader's fixtures: the roundtrip bundle matches its expected values, and every
broken bundle differs from the valid one in exactly its defect."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from bundle_oracle import read_all

from ttrace.bundle import DType, TensorKey
from ttrace.bundle.reader import BundleError, BundleReader
from ttrace_testing import fixtures


@pytest.fixture(scope="module")
def outdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fixtures")
    assert fixtures.main([str(out)]) == 0
    return out


def expected_tensors(outdir: Path) -> dict[str, tuple[np.ndarray, dict[str, Any], Any]]:
    found: dict[str, tuple[np.ndarray, dict[str, Any], Any]] = {}
    with h5py.File(outdir / "roundtrip-expected.h5", "r") as f:

        def visit(name: str, obj: object) -> None:
            if isinstance(obj, h5py.Dataset) and not name.endswith("__bits"):
                bits = f.get(name + "__bits")
                found["/" + name] = (obj[()], dict(obj.attrs), None if bits is None else bits[()])

        f.visititems(visit)
    return found


def same_float64(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values including the sign of zero; any NaN equals any NaN."""
    nan = np.isnan(a)
    return bool(
        a.shape == b.shape
        and np.array_equal(nan, np.isnan(b))
        and np.array_equal(a[~nan].view(np.uint64), b[~nan].view(np.uint64))
    )


# --- roundtrip ------------------------------------------------------------------------------


def test_roundtrip_covers_every_dtype_and_placement(outdir: Path) -> None:
    expected = expected_tensors(outdir)
    modules = {TensorKey.from_path(p).module for p in expected}
    assert modules == {f"{case}.{d}" for case, _, _ in fixtures.PLACEMENTS for d in DType.BY_NAME}
    assert len(DType.BY_NAME) == 10 and len(expected) == 80
    manifest = json.loads((outdir / "roundtrip" / "manifest.json").read_text())
    assert manifest["world_size"] == 4 and len(manifest["modules"]) == 80
    with h5py.File(outdir / "roundtrip" / "rank-00003.h5", "r") as f:
        cp = f["/nominal/iter_0/mb_0/cp.bfloat16/forward_output/0"]
        assert cp.attrs["boxes"].tolist() == [[0, 6, 2, 0, 0, 3], [2, 8, 2, 0, 0, 3]]
        flat = f["/nominal/iter_0/mb_all/flat.int32/optimizer_state/exp_avg.weight"]
        assert flat.attrs["placement"] == "flat" and flat.dtype == np.dtype("<i4")
        scalar = f["/nominal/iter_1/mb_1/scalar.float8_e5m2/forward_output/0"]
        assert scalar.attrs["is_scalar"] == 1 and scalar.shape == (1,)
        total = f["/nominal/iter_0/mb_0/sum.float16/forward_output/0"]
        assert total.attrs["partial_index"] == 1 and total.attrs["combine"] == "sum"


def test_roundtrip_merges_to_expected_values_and_bits(outdir: Path) -> None:
    merged = read_all(outdir / "roundtrip")
    expected = expected_tensors(outdir)
    assert set(merged) == set(expected)
    for path, (values, attrs, bits) in expected.items():
        dtype = DType.from_name(attrs["dtype"])
        got_values, got_bits = merged[path]
        assert values.dtype == np.float64
        assert same_float64(got_values, values), path
        if attrs["combine"] == "sum":
            assert bits is None and got_bits is None
        else:
            assert bits is not None and bits.dtype == dtype.storage, path
            assert got_bits is not None and bits.tobytes() == got_bits.tobytes(), path
            assert same_float64(dtype.decode(bits), values), path


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_low_precision_values_include_the_specials(outdir: Path, name: str) -> None:
    expected = expected_tensors(outdir)
    values = np.concatenate(
        [v.ravel() for p, (v, a, _) in expected.items() if a["dtype"] == name and "sum" not in p]
    )
    finite = values[np.isfinite(values)]
    dtype = DType.from_name(name)
    specials = dtype.decode(fixtures.special_storage(dtype))
    largest = float(specials[np.isfinite(specials)].max())
    assert np.isnan(values).any()
    assert (finite < 0).any() and (finite == largest).any() and (finite == -largest).any()
    assert (np.signbit(finite) & (finite == 0)).any(), "no -0.0"
    assert ((finite == 0) & ~np.signbit(finite)).any(), "no +0.0"
    smallest_normal = {
        "float16": 2.0**-14,
        "bfloat16": 2.0**-126,
        "float8_e4m3fn": 2.0**-6,
        "float8_e5m2": 2.0**-14,
    }[name]
    subnormal = (finite != 0) & (np.abs(finite) < smallest_normal)
    assert subnormal.any() and (finite[subnormal] < 0).any()
    known_max = {
        "float16": 65504.0,
        "bfloat16": 3.3895313892515355e38,
        "float8_e4m3fn": 448.0,
        "float8_e5m2": 57344.0,
    }
    assert largest == known_max[name]


def test_sums_are_exact_in_float64_and_never_negative_zero(outdir: Path) -> None:
    merged = read_all(outdir / "roundtrip")
    for path, (values, _) in merged.items():
        if "/sum." not in path:
            continue
        assert not (np.signbit(values) & (values == 0)).any(), path
    with (
        h5py.File(outdir / "roundtrip" / "rank-00000.h5") as r0,
        h5py.File(outdir / "roundtrip" / "rank-00001.h5") as r1,
    ):
        for name in DType.BY_NAME:
            path = f"/nominal/iter_0/mb_0/sum.{name}/forward_output/0"
            dtype = DType.from_name(name)
            a, b = dtype.decode(r0[path][()]).ravel(), dtype.decode(r1[path][()]).ravel()
            for x, y in zip(a, b, strict=True):
                if math.isfinite(x) and math.isfinite(y):
                    assert Fraction(x) + Fraction(y) == Fraction(x + y), (path, x, y)
    # The DP replicas of each partial are identical.
    for a_rank, b_rank in ((0, 2), (1, 3)):
        with (
            h5py.File(outdir / "roundtrip" / f"rank-{a_rank:05d}.h5") as fa,
            h5py.File(outdir / "roundtrip" / f"rank-{b_rank:05d}.h5") as fb,
        ):
            for name in DType.BY_NAME:
                path = f"/nominal/iter_0/mb_0/sum.{name}/forward_output/0"
                assert fa[path][()].tobytes() == fb[path][()].tobytes()


# --- broken ---------------------------------------------------------------------------------


def snapshot(bundle: Path) -> dict[str, Any]:
    """Everything in a bundle, flattened to comparable items."""
    items: dict[str, Any] = {}
    manifest = bundle / "manifest.json"
    if manifest.exists():
        text = manifest.read_text()
        try:
            for key, value in json.loads(text).items():
                items[f"manifest:{key}"] = json.dumps(value, sort_keys=True)
        except json.JSONDecodeError:
            items["manifest:raw"] = text
    for path in sorted(bundle.glob("rank-*.h5")):
        try:
            file = h5py.File(path, "r")
        except OSError:
            items[f"{path.name}:raw"] = path.read_bytes()
            continue
        with file:
            for key, value in file.attrs.items():
                items[f"{path.name}:attr:{key}"] = repr(value)

            def visit(name: str, obj: object, file_name: str = path.name) -> None:
                prefix = f"{file_name}:/{name}"
                if isinstance(obj, h5py.Dataset):
                    data = obj[()]
                    items[f"{prefix}:data"] = (data.dtype.str, data.shape, data.tobytes())
                    for key, value in obj.attrs.items():
                        items[f"{prefix}:attr:{key}"] = repr(np.asarray(value).tolist())
                else:
                    items[f"{prefix}:group"] = True

            file.visititems(visit)
    return items


def differences(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    return {k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>")}


R1 = "rank-00001.h5"
SPLIT = fixtures.SPLIT.path
REPLICA = fixtures.REPLICA.path


def test_expected_txt_lists_every_case(outdir: Path) -> None:
    lines = (outdir / "broken" / "EXPECTED.txt").read_text().splitlines()
    table = dict(line.split("\t") for line in lines)
    assert table == fixtures.BROKEN_CASES and len(lines) == len(fixtures.BROKEN_CASES)
    assert {p.name for p in (outdir / "broken").iterdir() if p.is_dir()} == set(table)


def test_valid_bundle_reads_cleanly(outdir: Path) -> None:
    merged = read_all(outdir / "valid")
    assert len(merged) == 4
    values, _ = merged[SPLIT]
    np.testing.assert_array_equal(values, np.arange(16).reshape(4, 4) - 3.5)
    assert merged[fixtures.LOSS.path][0].tolist() == [0.75]


@pytest.mark.parametrize("case", list(fixtures.BROKEN_CASES))
def test_broken_case_has_exactly_its_defect(outdir: Path, case: str) -> None:
    valid, broken = snapshot(outdir / "valid"), snapshot(outdir / "broken" / case)
    diff = differences(valid, broken)
    rank1_items = {k for k in valid if k.startswith(R1 + ":")}
    manifest_items = {k for k in valid if k.startswith("manifest:")}
    valid_r1 = (outdir / "valid" / R1).read_bytes()
    broken_r1 = outdir / "broken" / case / R1
    if case == "missing-rank-file":
        assert diff == rank1_items and not broken_r1.exists()
    elif case in ("truncated-file", "not-hdf5"):
        assert diff == rank1_items | {f"{R1}:raw"}
        if case == "truncated-file":
            assert broken_r1.read_bytes() == valid_r1[: len(valid_r1) // 2]
        else:
            assert not h5py.is_hdf5(broken_r1)
    elif case == "bad-version":
        assert diff == {"manifest:format_version"} and broken["manifest:format_version"] == "99"
    elif case == "bad-manifest-json":
        assert diff == manifest_items | {"manifest:raw"}
        text = (outdir / "valid" / "manifest.json").read_text()
        assert broken["manifest:raw"] == text[: len(text) // 2]
    elif case == "missing-manifest":
        assert diff == manifest_items
    elif case == "box-outside-shape":
        assert diff == {f"{R1}:{REPLICA}:attr:boxes", "manifest:ranks"}
        assert broken[f"{R1}:{REPLICA}:attr:boxes"] == "[[0, 1, 3]]"
    elif case == "holes":
        removed = {
            k for k in rank1_items if k.startswith(f"{R1}:/nominal/iter_0/mb_0/layers.0.mlp.fc1")
        }
        assert diff == removed | {"manifest:ranks"}
        assert ranks_delta(valid, broken) == {"tensors": -1, "bytes": -32}
    elif case == "overlap-copy":
        assert diff == {f"{R1}:{SPLIT}:data", f"{R1}:{SPLIT}:attr:boxes", "manifest:ranks"}
        assert ranks_delta(valid, broken) == {"tensors": 0, "bytes": 16}
    elif case == "replica-disagree":
        assert diff == {f"{R1}:{REPLICA}:data", "manifest:ranks"}
    elif case == "unknown-dtype":
        assert diff == {f"{R1}:{SPLIT}:attr:dtype", "manifest:ranks"}
        assert broken[f"{R1}:{SPLIT}:attr:dtype"] == "'float7'"
    elif case == "tensor-count-mismatch":
        assert diff == {"manifest:ranks"}
        assert ranks_delta(valid, broken) == {"tensors": 1, "bytes": 0}
    elif case == "rank-attr-mismatch":
        assert diff == {f"{R1}:attr:rank", "manifest:ranks"}
    elif case == "corrupt-bytes":
        data = (outdir / "broken" / case / R1).read_bytes()
        assert len(data) == len(valid_r1) and data != valid_r1
        assert sum(a != b for a, b in zip(data, valid_r1, strict=True)) == 8
        assert "manifest:ranks" not in diff  # the manifest still describes the good file
    else:
        pytest.fail(f"untested case {case}")


def ranks_delta(valid: dict[str, Any], broken: dict[str, Any]) -> dict[str, int]:
    before, after = json.loads(valid["manifest:ranks"]), json.loads(broken["manifest:ranks"])
    assert before[0] == after[0]
    # A defect written into the file also changes its recorded size and checksum.
    changing = ("tensors", "bytes", "file_size", "crc32")
    rest = {k: v for k, v in after[1].items() if k not in changing}
    assert rest == {k: v for k, v in before[1].items() if k not in changing}
    return {k: after[1][k] - before[1][k] for k in ("tensors", "bytes")}


@pytest.mark.parametrize("case", list(fixtures.BROKEN_CASES))
def test_package_reader_reports_the_expected_phrase(outdir: Path, case: str) -> None:
    # The Python reader that ships with the package (ttrace.bundle.reader) finds every
    # defect the C++ reader finds, worded to contain the EXPECTED.txt phrase.
    try:
        problems = BundleReader(outdir / "broken" / case).validate()
    except (BundleError, ValueError) as error:
        problems = [str(error)]
    phrase = fixtures.BROKEN_CASES[case]
    assert any(phrase in p for p in problems), problems


def test_fixtures_are_deterministic(outdir: Path, tmp_path: Path) -> None:
    fixtures.write_roundtrip(tmp_path)
    again = expected_tensors(tmp_path)
    first = expected_tensors(outdir)
    assert again.keys() == first.keys()
    for path, (values, _, bits) in first.items():
        assert same_float64(again[path][0], values)
        assert (bits is None and again[path][2] is None) or bits.tobytes() == again[path][
            2
        ].tobytes()
