"""BundleWriter, Placement, TensorKey, DType and the manifest, read back with h5py."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import zlib
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from ttrace.bundle import (
    BundleWriter,
    DType,
    Manifest,
    Placement,
    RankRecord,
    TensorKey,
    write_manifest,
)
from ttrace.bundle.checksum import file_checksum

KEY = TensorKey("nominal", 3, 1, "layers.0.mlp", "forward_output", "0")

TORCH_DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
STORAGE = {
    "float64": "<f8",
    "float32": "<f4",
    "float16": "<u2",
    "bfloat16": "<u2",
    "float8_e4m3fn": "|u1",
    "float8_e5m2": "|u1",
    "int64": "<i8",
    "int32": "<i4",
    "uint8": "|u1",
    "bool": "|u1",
}


def torch_bits(tensor: torch.Tensor) -> bytes:
    """The tensor's raw bytes, an independent route to compare the writer against."""
    return tensor.contiguous().view(torch.uint8).numpy().tobytes()


def sample(name: str) -> torch.Tensor:
    values = torch.tensor([[0.0, -0.0, 1.5, -2.25], [1e-40, -3.0e38, float("nan"), 7.0]])
    if name in ("int64", "int32", "uint8"):
        return torch.tensor([[0, 1, 2, 3], [4, 250, 6, 7]]).to(TORCH_DTYPES[name])
    if name == "bool":
        return torch.tensor([[True, False, True, True], [False, False, True, False]])
    return values.to(TORCH_DTYPES[name])


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return tmp_path / "bundle"


def read_dataset(bundle: Path, key: TensorKey, rank: int = 0) -> tuple[np.ndarray, dict]:
    with h5py.File(bundle / f"rank-{rank:05d}.h5", "r") as f:
        dataset = f[key.path]
        return dataset[()], dict(dataset.attrs)


# --- bits and storage -----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TORCH_DTYPES))
def test_torch_tensor_is_stored_bit_exactly(bundle: Path, name: str) -> None:
    tensor = sample(name)
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, tensor)
    stored, attrs = read_dataset(bundle, KEY)
    assert stored.dtype == np.dtype(STORAGE[name])
    assert stored.shape == (2, 4)
    assert attrs["dtype"] == name
    assert stored.tobytes() == torch_bits(tensor)
    # Decoding and converting back to torch give the same bits and values.
    dtype = DType.from_name(name)
    back = dtype.to_torch(stored)
    assert back.dtype == tensor.dtype
    assert torch.equal(back.view(torch.uint8), tensor.view(torch.uint8))
    expected = tensor.to(torch.float64).numpy()
    np.testing.assert_array_equal(dtype.decode(stored), expected)
    assert np.array_equal(np.signbit(dtype.decode(stored)), np.signbit(expected))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_decode_matches_torch_for_every_bit_pattern(name: str) -> None:
    dtype = DType.from_name(name)
    width = dtype.storage.itemsize
    bits = np.arange(1 << (8 * width), dtype=np.uint64).astype(dtype.storage)
    mine = dtype.decode(bits)
    theirs = dtype.to_torch(bits).to(torch.float64).numpy()
    assert np.array_equal(mine, theirs, equal_nan=True)
    assert np.array_equal(np.signbit(mine[~np.isnan(mine)]), np.signbit(theirs[~np.isnan(theirs)]))


def test_nan_payload_and_negative_zero_survive(bundle: Path) -> None:
    bits = np.asarray([0x7FC1, 0xFFC0, 0x8000, 0x0001], dtype=np.uint16)
    tensor = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, tensor)
    stored, _ = read_dataset(bundle, KEY)
    assert stored.tolist() == [0x7FC1, 0xFFC0, 0x8000, 0x0001]


def test_non_contiguous_grad_requiring_tensor(bundle: Path) -> None:
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4).requires_grad_(True)
    view = base.t() * 2  # non-contiguous, part of an autograd graph
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, view)
    stored, attrs = read_dataset(bundle, KEY)
    np.testing.assert_array_equal(stored, view.detach().numpy())
    assert attrs["global_shape"].tolist() == [4, 3]


def test_numpy_native_and_raw_bits(bundle: Path) -> None:
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, np.asarray([1.5, -0.0], dtype=np.float16))
        writer.write(
            KEY.with_variant("perturbed-1"), np.asarray([0x3F80], np.uint16), dtype="bfloat16"
        )
        writer.write(KEY.with_variant("perturbed-2"), np.asarray([True, False]))
    stored, attrs = read_dataset(bundle, KEY)
    assert attrs["dtype"] == "float16" and stored.tolist() == [0x3E00, 0x8000]
    stored, attrs = read_dataset(bundle, KEY.with_variant("perturbed-1"))
    assert attrs["dtype"] == "bfloat16" and stored.tolist() == [0x3F80]
    stored, attrs = read_dataset(bundle, KEY.with_variant("perturbed-2"))
    assert attrs["dtype"] == "bool" and stored.dtype == np.uint8 and stored.tolist() == [1, 0]


# --- attributes and paths -------------------------------------------------------------------


def test_root_attributes(bundle: Path) -> None:
    coords = {"tp": 1, "pp": 2, "dp": 0, "cp": 1}
    writer = BundleWriter(bundle, rank=3, world_size=8, role="candidate", coords=coords)
    record = writer.close()
    with h5py.File(bundle / "rank-00003.h5", "r") as f:
        attrs = dict(f.attrs)
    assert attrs["format"] == "ttrace-bundle"
    assert attrs["format_version"] == 2 and attrs["format_version"].dtype == np.int64
    assert attrs["rank"] == 3 and attrs["world_size"] == 8 and attrs["role"] == "candidate"
    expected = {"tp": 1, "pp": 2, "dp": 0, "cp": 1, "ep": 0, "vpp": 0}
    assert {k: int(attrs[f"coord_{k}"]) for k in expected} == expected
    assert all(attrs[f"coord_{k}"].dtype == np.int64 for k in expected)
    size, crc = file_checksum(bundle / "rank-00003.h5")
    assert record == RankRecord(
        rank=3,
        file="rank-00003.h5",
        coords=expected,
        tensors=0,
        bytes=0,
        file_size=size,
        crc32=crc,
    )
    assert size == (bundle / "rank-00003.h5").stat().st_size and len(crc) == 8


def test_checksum_matches_zlib(tmp_path: Path) -> None:
    payload = b"ttrace" * 1_000_003  # more than one read chunk
    (tmp_path / "f").write_bytes(payload)
    assert file_checksum(tmp_path / "f") == (len(payload), f"{zlib.crc32(payload):08x}")


def test_dataset_attributes_and_path(bundle: Path) -> None:
    placement = Placement.split((6, 8), 1, 1, 2)
    with BundleWriter(bundle, rank=1, world_size=2, role="candidate", coords={"tp": 1}) as writer:
        writer.write(KEY, torch.ones(6, 4), placement)
    with h5py.File(bundle / "rank-00001.h5", "r") as f:
        assert "/nominal/iter_3/mb_1/layers.0.mlp/forward_output/0" in f
        attrs = dict(f[KEY.path].attrs)
    assert attrs["variant"] == "nominal" and attrs["module"] == "layers.0.mlp"
    assert attrs["kind"] == "forward_output" and attrs["index"] == "0"
    assert attrs["iteration"] == 3 and attrs["micro_batch"] == 1
    assert attrs["iteration"].dtype == np.int64
    assert attrs["global_shape"].tolist() == [6, 8] and attrs["global_shape"].dtype == np.int64
    assert attrs["placement"] == "boxes" and attrs["combine"] == "copy"
    assert attrs["boxes"].tolist() == [[0, 0, 6, 0, 4, 4]] and attrs["boxes"].dtype == np.int64
    assert "partial_index" not in attrs and "flat_ranges" not in attrs
    assert "is_scalar" not in attrs


def test_mb_all_flat_and_sum(bundle: Path) -> None:
    key = TensorKey("nominal", 0, -1, "layers.1.norm", "optimizer_state", "exp_avg.weight")
    flat = Placement.flat((4, 5), [(0, 2, 3), (3, 10, 4)])
    with BundleWriter(bundle, rank=1, world_size=2, role="candidate") as writer:
        writer.write(key, np.arange(7, dtype=np.float32), flat)
        writer.write(KEY, torch.zeros(2, 2), Placement.full((2, 2)).with_combine("sum"))
        writer.write(
            KEY.with_variant("x"), torch.zeros(2, 2), Placement.full((2, 2)).with_partial(0)
        )
    assert key.path == "/nominal/iter_0/mb_all/layers.1.norm/optimizer_state/exp_avg.weight"
    _, attrs = read_dataset(bundle, key, rank=1)
    assert attrs["placement"] == "flat" and "boxes" not in attrs
    assert attrs["flat_ranges"].tolist() == [[0, 2, 3], [3, 10, 4]]
    assert attrs["micro_batch"] == -1
    _, attrs = read_dataset(bundle, KEY, rank=1)
    # A sum without a stated partial index is this rank's own partial.
    assert attrs["combine"] == "sum" and attrs["partial_index"] == 1
    _, attrs = read_dataset(bundle, KEY.with_variant("x"), rank=1)
    assert attrs["partial_index"] == 0 and attrs["partial_index"].dtype == np.int64


def test_scalar(bundle: Path) -> None:
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, torch.tensor(2.5))
    stored, attrs = read_dataset(bundle, KEY)
    assert stored.shape == (1,) and stored[0] == 2.5
    assert attrs["is_scalar"] == 1 and attrs["global_shape"].tolist() == [1]
    assert attrs["boxes"].tolist() == [[0, 0, 1]]


def test_record_counts_and_serializes(bundle: Path) -> None:
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, torch.zeros(3, 5, dtype=torch.bfloat16))
        writer.write(KEY.with_variant("perturbed-1"), torch.zeros(7, dtype=torch.float64))
    record = writer.close()
    assert writer.close() is record and writer.record is record and writer.closed
    assert record.tensors == 2 and record.bytes == 3 * 5 * 2 + 7 * 8
    assert pickle.loads(pickle.dumps(record)) == record
    assert RankRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record


def test_h5dump_reads_the_file(bundle: Path) -> None:
    if shutil.which("h5dump") is None:
        pytest.skip("h5dump not installed")
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, torch.ones(2, dtype=torch.float8_e4m3fn))
    out = subprocess.run(
        ["h5dump", "-A", str(bundle / "rank-00000.h5")], capture_output=True, text=True, check=True
    ).stdout
    assert '"float8_e4m3fn"' in out and '"ttrace-bundle"' in out and "H5T_STD_U8LE" in out


# --- placements and keys --------------------------------------------------------------------


def test_placement_constructors() -> None:
    assert Placement.split((4, 6), 0, 1, 2).box_spans == (((0, 2, 2), (0, 0, 6)),)
    cp = Placement.cp_two_chunk((8, 3), 0, 1, 2)
    assert cp.box_spans == (((0, 2, 2), (0, 0, 3)), ((2, 4, 2), (0, 0, 3)))
    assert cp.local_shape() == (4, 3)
    boxes = Placement.boxes((4, 4), boxes=[[(0, 0, 2), (0, 2, 2)]], combine="sum", partial_index=1)
    assert boxes.combine == "sum" and boxes.partial_index == 1
    assert boxes.with_combine("replica").partial_index is None
    assert Placement.full(()).global_shape == (1,)
    assert Placement.flat((3,), [(0, 0, 3)]).with_partial(2).combine == "sum"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Placement.boxes((4, 4), [[(0, 3, 2), (0, 0, 4)]]), "outside global_shape"),
        (lambda: Placement.flat((2, 2), [(0, 2, 3)]), "outside"),
        (lambda: Placement.boxes((4, 4), [[(0, 0, 4)]]), "dimensions"),
        (lambda: Placement.split((5, 2), 0, 0, 2), "evenly"),
        (lambda: Placement.cp_two_chunk((6, 2), 0, 0, 2), "chunks"),
        (lambda: Placement.full((2,), combine="max"), "unknown combine"),
        (lambda: Placement.boxes((2,), [[(0, 0, 2)]], partial_index=1), "partial_index"),
        (lambda: Placement.boxes((2,), [[(0, -1, 2)]]), "negative"),
    ],
)
def test_bad_placements_raise(make: Callable[[], Placement], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_tensor_key_paths() -> None:
    assert TensorKey.from_path(KEY.path) == KEY
    mb_all = TensorKey("perturbed-2", 10, -1, "model", "main_grad", "weight")
    assert mb_all.path == "/perturbed-2/iter_10/mb_all/model/main_grad/weight"
    assert TensorKey.from_path(mb_all.path) == mb_all
    assert TensorKey("nominal", 0, 0, "m", "input_grad", 2).index == "2"  # type: ignore[arg-type]
    for bad in (
        dict(kind="activation"),
        dict(module="a/b"),
        dict(module=""),
        dict(index="x/y"),
        dict(variant="no/slash"),
        dict(iteration=-1),
        dict(micro_batch=-2),
    ):
        fields = {
            "variant": "nominal",
            "iteration": 0,
            "micro_batch": 0,
            "module": "m",
            "kind": "parameter",
            "index": "weight",
        } | bad
        with pytest.raises(ValueError):
            TensorKey(**fields)  # type: ignore[arg-type]


# --- bad writer input -----------------------------------------------------------------------


def test_placement_outside_local_shape_names_the_tensor(bundle: Path) -> None:
    with BundleWriter(bundle, rank=2, world_size=4, role="candidate") as writer:
        with pytest.raises(ValueError, match=r"rank 2: /nominal/iter_3/mb_1/layers\.0\.mlp.*local"):
            writer.write(KEY, torch.zeros(2, 3), Placement.split((8, 3), 0, 0, 2))
        with pytest.raises(ValueError, match=r"layers\.0\.mlp.*dimensions"):
            writer.write(KEY, torch.zeros(6), Placement.full((2, 3)))
        with pytest.raises(ValueError, match=r"layers\.0\.mlp.*outside"):
            writer.write(KEY, torch.zeros(5), Placement.flat((10,), [(2, 0, 4)]))
    assert writer.close().tensors == 0


@pytest.mark.parametrize(
    ("tensor", "dtype", "message"),
    [
        (torch.zeros(2, dtype=torch.int16), None, "unsupported torch dtype"),
        (torch.zeros(2, dtype=torch.uint16), None, "unsupported torch dtype"),  # complex: pairs
        (np.zeros(2, dtype=np.int16), None, "unsupported numpy dtype"),
        (np.zeros(2, dtype=np.uint16), "float7", "unknown dtype 'float7'"),
        (np.zeros(2, dtype=np.uint8), "bfloat16", "2-byte"),
        (np.zeros(2, dtype=np.float32), "float64", "contradicts"),
        (torch.zeros(2), "bfloat16", "contradicts"),
        ([1.0, 2.0], None, "torch.Tensor or numpy"),
    ],
)
def test_bad_dtype_raises(bundle: Path, tensor: object, dtype: str | None, message: str) -> None:
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        with pytest.raises((ValueError, TypeError), match=message) as info:
            writer.write(KEY, tensor, dtype=dtype)  # type: ignore[arg-type]
        assert KEY.path in str(info.value)


def test_write_after_close_raises(bundle: Path) -> None:
    writer = BundleWriter(bundle, rank=0, world_size=1, role="reference")
    writer.close()
    with pytest.raises(RuntimeError, match="closed"):
        writer.write(KEY, torch.zeros(1))


def test_duplicate_key_raises(bundle: Path) -> None:
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, torch.zeros(1))
        with pytest.raises(ValueError, match="already written"):
            writer.write(KEY, torch.ones(1))
    assert writer.close().tensors == 1


def test_bad_writer_arguments(bundle: Path) -> None:
    with pytest.raises(ValueError, match="rank"):
        BundleWriter(bundle, rank=4, world_size=4, role="candidate")
    with pytest.raises(ValueError, match="role"):
        BundleWriter(bundle, rank=0, world_size=1, role="baseline")
    with pytest.raises(ValueError, match="coordinates"):
        BundleWriter(bundle, rank=0, world_size=1, role="reference", coords={"sp": 1})


# --- manifest -------------------------------------------------------------------------------


MODULES = [
    {"name": "a", "order": 0, "depth": 0, "type": "Linear"},
    {"name": "b", "order": 1, "depth": 1, "type": "GELU"},
]


def manifest_args(records: list[RankRecord]) -> dict:
    return dict(
        role="candidate",
        world_size=2,
        parallel={"tp": 2},
        precision="bf16",
        variants=["nominal"],
        modules=MODULES,
        iterations=[0, 1],
        micro_batches=2,
        ranks=records,
        model="tiny",
    )


def two_ranks(bundle: Path) -> list[RankRecord]:
    records = []
    for rank in range(2):
        with BundleWriter(
            bundle, rank=rank, world_size=2, role="candidate", coords={"tp": rank}
        ) as w:
            w.write(KEY, torch.zeros(2, 3), Placement.split((4, 3), 0, rank, 2))
        records.append(w.close())
    return records


def test_manifest_fields(bundle: Path) -> None:
    records = two_ranks(bundle)
    path = write_manifest(bundle, **manifest_args(list(reversed(records))))
    data = json.loads(path.read_text())
    assert path == bundle / "manifest.json"
    assert data["format"] == "ttrace-bundle" and data["format_version"] == 2
    assert data["role"] == "candidate" and data["world_size"] == 2
    assert data["parallel"] == {"tp": 2, "pp": 1, "dp": 1, "cp": 1, "ep": 1, "vpp": 1}
    assert data["precision"] == "bf16" and data["variants"] == ["nominal"]
    assert data["modules"] == MODULES and data["iterations"] == [0, 1]
    assert data["micro_batches"] == 2 and data["model"] == "tiny"
    assert "perturbation" not in data
    assert [r["rank"] for r in data["ranks"]] == [0, 1]
    assert data["ranks"][1] == {
        "rank": 1,
        "file": "rank-00001.h5",
        "coords": {"tp": 1, "pp": 0, "dp": 0, "cp": 0, "ep": 0, "vpp": 0},
        "tensors": 1,
        "bytes": 24,
        "file_size": (bundle / "rank-00001.h5").stat().st_size,
        "crc32": file_checksum(bundle / "rank-00001.h5")[1],
    }
    assert data["producer"] == "ttrace 0.1.0"
    assert data["created"].endswith("Z")
    assert not (bundle / "manifest.json.tmp").exists()
    assert Manifest.read(bundle).to_dict() == data


def test_reference_manifest_with_perturbation(tmp_path: Path) -> None:
    with BundleWriter(tmp_path, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, torch.zeros(1))
    perturbation = {"scheme": "relative-uniform", "relative_scale": 5.96e-08, "seeds": [1, 2]}
    write_manifest(
        tmp_path,
        role="reference",
        world_size=1,
        parallel={},
        precision="fp32",
        variants=["nominal", "perturbed-1", "perturbed-2"],
        modules=MODULES,
        iterations=[0],
        micro_batches=1,
        ranks=[writer.close().to_dict()],
        perturbation=perturbation,
    )
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["perturbation"] == perturbation
    assert data["variants"] == ["nominal", "perturbed-1", "perturbed-2"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"parallel": {"tp": 2, "dp": 2}}, "world_size"),
        ({"world_size": 3, "parallel": {"tp": 3}}, "missing"),
        ({"variants": ["perturbed-1"]}, "nominal"),
        ({"variants": ["nominal", "perturbed-1"]}, "candidate"),
        ({"role": "baseline"}, "role"),
        ({"precision": "fp4"}, "precision"),
        ({"modules": [{"name": "a", "order": 1, "depth": 0, "type": "X"}]}, "order"),
        ({"modules": [{"name": "a", "order": 0}]}, "lacks"),
        ({"parallel": {"tp": 2, "zz": 1}}, "unknown parallel"),
    ],
)
def test_bad_manifest_raises(bundle: Path, change: dict, message: str) -> None:
    records = two_ranks(bundle)
    with pytest.raises(ValueError, match=message):
        write_manifest(bundle, **(manifest_args(records) | change))
    assert not (bundle / "manifest.json").exists()


def _write_mixed(folder: Path) -> bytes:
    g = torch.Generator().manual_seed(7)
    tensors = {
        "rows_above_sieve": torch.randn(5, 40000, generator=g),  # a row > HDF5's sieve buffer
        "rows_below_sieve": torch.randn(300, 3, 700, generator=g),
        "bf16": torch.randn(1000, 600, generator=g).to(torch.bfloat16),
        "int64": torch.randint(-(2**40), 2**40, (70000, 3), generator=g),
        "bool": torch.rand(2_000_000, generator=g) > 0.5,
        "flat": torch.randn(400_000, generator=g),
        "complex": torch.randn(300, 600, dtype=torch.complex64, generator=g),
        "strided": torch.randn(900, 500, generator=g).t(),
        "small": torch.randn(3, 4, generator=g),
        "scalar": torch.tensor(1.5),
        "empty": torch.zeros(0, 5),
    }
    with BundleWriter(folder, 0, 1, "reference") as w:
        for name, t in tensors.items():
            w.write(TensorKey("nominal", 0, 0, "m", "forward_output", name), t)
    return (folder / "rank-00000.h5").read_bytes()


def test_attribute_calls_leave_the_same_file_bytes(tmp_path: Path, monkeypatch) -> None:
    """Attributes through ctypes (GIL released) and through h5py: the same file, byte for
    byte."""
    from ttrace.bundle import hdf5_calls

    direct = _write_mixed(tmp_path / "ctypes")
    loaded = hdf5_calls.Hdf5Calls.load(h5py.h5s.create(h5py.h5s.SCALAR))
    assert loaded is not None  # Linux: h5py's own library is found
    monkeypatch.setattr(hdf5_calls.Hdf5Calls, "load", lambda probe: None)
    assert _write_mixed(tmp_path / "h5py") == direct


def test_direct_writes_store_what_was_captured(tmp_path: Path, monkeypatch) -> None:
    """Datasets written with os.pwrite into early-allocated storage hold exactly the bytes
    H5Dwrite would store, with the same attributes; only their allocation time differs."""
    from ttrace.bundle import attribute_writer

    monkeypatch.setattr(attribute_writer, "DIRECT_WRITE_BYTES", 1 << 62)  # never direct
    _write_mixed(tmp_path / "hdf5")
    calls: list[int] = []
    direct = attribute_writer._write_direct
    monkeypatch.setattr(attribute_writer, "DIRECT_WRITE_BYTES", 16 << 10)
    monkeypatch.setattr(
        attribute_writer,
        "_write_direct",
        lambda offset, data, fd: calls.append(data.nbytes) or direct(offset, data, fd),
    )
    _write_mixed(tmp_path / "direct")
    assert len(calls) == 8  # all but the small, the scalar and the empty tensor
    with (
        h5py.File(tmp_path / "hdf5" / "rank-00000.h5") as a,
        h5py.File(tmp_path / "direct" / "rank-00000.h5") as b,
    ):
        group = "nominal/iter_0/mb_0/m/forward_output"
        assert sorted(a[group]) == sorted(b[group])
        for name in a[group]:
            x, y = a[group][name], b[group][name]
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert x[()].tobytes() == y[()].tobytes(), name
            assert dict(x.attrs).keys() == dict(y.attrs).keys(), name
            for attr, value in x.attrs.items():
                assert np.array_equal(value, y.attrs[attr]), (name, attr)
        flat = b[f"{group}/flat"]
        assert flat.id.get_offset() is not None  # contiguous storage, as a reader expects
    assert np.array_equal(
        flat_values(tmp_path / "direct"),
        torch.randn(400_000, generator=_seeded_after_five()).numpy(),
    )


def flat_values(folder: Path) -> np.ndarray:
    with h5py.File(folder / "rank-00000.h5") as f:
        return f["nominal/iter_0/mb_0/m/forward_output/flat"][()]


def test_close_fsyncs_the_rank_file(bundle: Path, monkeypatch) -> None:
    """The rank file is on the disk (fsync, after HDF5 closed it) before close() returns
    the manifest entry, and its checksum is that of the final bytes."""
    from ttrace.bundle import writer as writer_module

    synced: list[tuple[str, int]] = []
    fsync = writer_module.os.fsync

    def record(fd: int) -> None:
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size))
        fsync(fd)

    monkeypatch.setattr(writer_module.os, "fsync", record)
    writer = BundleWriter(bundle, rank=0, world_size=1, role="reference")
    writer.write(KEY, torch.randn(300, 400))
    record_ = writer.close()
    path = bundle / "rank-00000.h5"
    assert synced == [(str(path.resolve()), path.stat().st_size)]
    assert (record_.file_size, record_.crc32) == file_checksum(path)


def test_writeback_starts_while_writing(bundle: Path, monkeypatch) -> None:
    """Every WRITEBACK_BYTES of tensors the kernel is asked to start writing the file back,
    so the fsync at close has little left to wait for."""
    from ttrace.bundle import writer as writer_module

    # The C library's call is found on Linux (os has none): the writeback is real here.
    assert writer_module._sync_file_range is not None
    started: list[int] = []
    real = writer_module.start_writeback
    monkeypatch.setattr(writer_module, "WRITEBACK_BYTES", 1 << 20)
    monkeypatch.setattr(
        writer_module,
        "start_writeback",
        lambda fd: started.append(os.fstat(fd).st_size) or real(fd),
    )
    with BundleWriter(bundle, rank=0, world_size=1, role="reference") as writer:
        for i in range(5):
            key = TensorKey("nominal", 0, 0, "m", "forward_output", str(i))
            writer.write(key, torch.randn(600, 1000))  # 2.4 MB each
    assert len(started) == 5 and started == sorted(started) and started[0] >= 2_400_000


def _seeded_after_five() -> torch.Generator:
    """The generator `_write_mixed` used, at the point where it drew "flat"."""
    g = torch.Generator().manual_seed(7)
    torch.randn(5, 40000, generator=g)
    torch.randn(300, 3, 700, generator=g)
    torch.randn(1000, 600, generator=g)
    torch.randint(-(2**40), 2**40, (70000, 3), generator=g)
    torch.rand(2_000_000, generator=g)
    return g
