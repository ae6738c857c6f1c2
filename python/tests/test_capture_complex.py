"""Complex, integer and boolean tensors: complex ones stored as (real, imaginary) pairs and
compared by the real `ttrace diff`; a model's constant tables (a complex rotary buffer
passed positionally, torchtitan-style) placed whole; integer and boolean inputs captured."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch
from cli_paths import ttrace_binary
from torch import nn

from ttrace.bundle import BundleWriter, Placement, TensorKey
from ttrace.bundle.reader import BundleReader
from ttrace.capture import Tracer

KEY = TensorKey("nominal", 0, 0, "rot", "forward_input", "1")


def test_complex_tensor_is_stored_as_pairs_with_its_placement(tmp_path: Path) -> None:
    z = torch.polar(torch.ones(4, 3), torch.arange(12.0).view(4, 3))  # complex64
    with BundleWriter(tmp_path, rank=0, world_size=1, role="reference") as writer:
        writer.write(KEY, z[2:], Placement.split((4, 3), 0, 1, 2))
        writer.write(KEY.with_variant("perturbed-1"), np.complex128(1.5 - 2j))
    with h5py.File(tmp_path / "rank-00000.h5") as f:
        ds = f[KEY.path]
        assert ds.dtype == np.float32 and ds.shape == (2, 3, 2)
        assert ds.attrs["complex"] == "complex64" and ds.attrs["dtype"] == "float32"
        assert ds.attrs["global_shape"].tolist() == [4, 3, 2]
        assert ds.attrs["boxes"].tolist() == [[0, 2, 2, 0, 0, 3, 0, 0, 2]]
        np.testing.assert_array_equal(ds[()], torch.view_as_real(z[2:]).numpy())
        scalar = f[KEY.with_variant("perturbed-1").path]
        assert scalar.dtype == np.float64 and scalar[()].tolist() == [[1.5, -2.0]]
        assert "is_scalar" not in scalar.attrs


def test_flat_ranges_of_a_complex_shard_cover_its_pairs() -> None:
    flat = Placement.flat((6,), [(0, 2, 3)]).with_pair_dim()
    assert flat.global_shape == (6, 2) and flat.flat_ranges == ((0, 4, 6),)


class Rotary(nn.Module):
    """Rotates pairs of `x` by a complex table; also takes integer positions and a mask."""

    def forward(
        self, x: torch.Tensor, table: torch.Tensor, pos: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2)) * table[pos]
        return torch.view_as_real(z).flatten(-2) * mask.unsqueeze(-1)


class Model(nn.Module):
    def __init__(self, phase_error: float = 0.0) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(8, 8)
        self.rot = Rotary()
        self.head = nn.Linear(8, 1)
        angles = torch.outer(torch.arange(6.0), torch.tensor([1.0, 0.5, 0.25, 0.125]))
        angles[3] += phase_error  # a wrong table entry: the injected bug
        self.register_buffer("freqs", torch.polar(torch.ones_like(angles), angles))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(x.shape[1]).expand(x.shape[0], -1)
        mask = torch.ones(x.shape[:2], dtype=torch.bool)
        return self.head(self.rot(self.proj(x), self.freqs, pos, mask))


def capture(out: Path, role: str, phase_error: float = 0.0) -> None:
    model = Model(phase_error)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer(model, opt, out, role=role, perturbations=2 * (role == "reference"))
    data = torch.randn(2, 4, 6, 8, generator=torch.Generator().manual_seed(1))
    for _ in tracer.run_variants():
        for it in range(2):
            with tracer.step(it):
                model(data[it]).square().mean().backward()
                opt.step()
                opt.zero_grad()
    tracer.close()


def test_complex_table_and_integer_inputs_are_captured(tmp_path: Path) -> None:
    capture(tmp_path / "ref", "reference")
    reader = BundleReader(tmp_path / "ref")
    ids = {(i[3], i[4], i[5]) for i in reader.identities() if i[0] == "nominal"}
    assert {("rot", "forward_input", str(k)) for k in range(4)} <= ids
    table = ("nominal", 0, 0, "rot", "forward_input", "1")
    with h5py.File(tmp_path / "ref" / "rank-00000.h5") as f:
        attrs = f["/nominal/iter_0/mb_0/rot/forward_input/1"].attrs
        assert attrs["complex"] == "complex64" and "layout_note" not in attrs
        assert f["/nominal/iter_0/mb_0/rot/forward_input/2"].attrs["dtype"] == "int64"
        assert f["/nominal/iter_0/mb_0/rot/forward_input/3"].attrs["dtype"] == "bool"
    freqs = Model().freqs
    np.testing.assert_array_equal(reader.merged(table), torch.view_as_real(freqs).numpy())


def diff(ref: Path, cand: Path, tmp: Path) -> tuple[int, dict]:
    report = tmp / f"{cand.name}.json"
    proc = subprocess.run(
        [str(ttrace_binary()), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, json.loads(report.read_text())


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("complex") / "ref"
    capture(out, "reference")
    return out


def test_diff_compares_complex_tensors(reference: Path, tmp_path: Path) -> None:
    capture(tmp_path / "clean", "candidate")
    rc, report = diff(reference, tmp_path / "clean", tmp_path)
    assert rc == 0 and report["summary"]["invalid"] == 0, report["summary"]
    # One table entry off by 1e-3 rad: the table itself is the first divergent tensor.
    capture(tmp_path / "bug", "candidate", phase_error=1e-3)
    rc, report = diff(reference, tmp_path / "bug", tmp_path)
    assert rc == 1, report["summary"]
    by_path = {
        (t["id"]["module"], t["id"]["kind"], t["id"]["index"]): t
        for t in report["tensors"]
        if t["id"]["iteration"] == 0
    }
    table = by_path[("rot", "forward_input", "1")]
    assert table["status"] == "divergent"
    # |e^{i(a+d)} - e^{ia}| = 2 sin(d/2) ~ d on 4 of 24 entries: error ~ 1e-3 * sqrt(4/24).
    assert table["error"] == pytest.approx(1e-3 * (4 / 24) ** 0.5, rel=1e-3)
    assert by_path[("rot", "forward_input", "2")]["status"] == "clean"
