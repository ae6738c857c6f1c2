"""The tracer in one process: what it captures, perturbed variants, the writer thread,
failure reporting."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import pytest
import torch
from torch import nn

from ttrace.bundle import BundleWriter, TensorKey
from ttrace.bundle.reader import BundleReader
from ttrace.capture import Tracer, TracerError, annotate
from ttrace.capture.async_writer import AsyncWriter


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Linear(4, 8)
        self.mlp = nn.Sequential(nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        return h + self.mlp(h).sum(-1, keepdim=True)


def train(out: Path, role: str = "reference", perturbations: int = 0, **kw) -> Tiny:
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    tracer = Tracer(model, opt, out, role=role, perturbations=perturbations, **kw)
    data = torch.randn(2, 2, 3, 4, generator=torch.Generator().manual_seed(1))
    for it in range(2):
        for _ in tracer.variants(it):
            opt.zero_grad()
            with tracer.step(it):
                for mb in range(2):
                    model(data[it, mb]).square().sum().backward()
                opt.step()
    tracer.close()
    return model


def test_captures_every_kind(tmp_path: Path) -> None:
    train(tmp_path / "b", iterations=[1])
    reader = BundleReader(tmp_path / "b")
    assert reader.validate() == []
    ids = set(reader.identities())
    kinds = {i[4] for i in ids if i[3] == "mlp.0"}
    assert kinds == {
        "forward_input", "forward_output", "output_grad", "input_grad",
        "parameter", "param_grad", "main_grad", "param_after_step", "optimizer_state",
    }  # fmt: skip
    assert ("nominal", 1, -1, "mlp.0", "optimizer_state", "momentum_buffer.weight") in ids
    assert {i[1] for i in ids} == {1}
    assert {i[2] for i in ids} == {-1, 0, 1}
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert [m["name"] for m in manifest["modules"]][:3] == ["embed", "mlp", "mlp.0"]
    # the accumulated gradient after micro-batch 1 is the main gradient (no reduction here)
    g1 = reader.merged(("nominal", 1, 1, "mlp.0", "param_grad", "weight"))
    main = reader.merged(("nominal", 1, -1, "mlp.0", "main_grad", "weight"))
    assert (g1 == main).all()


def test_input_grad_is_this_modules_share(tmp_path: Path) -> None:
    """embed's output feeds mlp and the residual: its gradient is the residual's gradient
    (2 * out for a squared loss) plus mlp's input_grad, which excludes the residual."""
    train(tmp_path / "b", iterations=[0])
    r = BundleReader(tmp_path / "b")
    key = ("nominal", 0, 0)
    h = r.merged((*key, "embed", "forward_output", "0"))
    s = r.merged((*key, "mlp", "forward_output", "0"))
    out = h + s.sum(-1, keepdims=True)
    mlp_in = r.merged((*key, "mlp", "input_grad", "0"))
    embed_out = r.merged((*key, "embed", "output_grad", "0"))
    assert abs(embed_out - (2 * out + mlp_in)).max() < 1e-5
    assert abs(mlp_in).max() > 1e-3


def test_perturbed_variants_leave_nominal_bit_identical(tmp_path: Path) -> None:
    plain = train(tmp_path / "plain")
    perturbed = train(tmp_path / "pert", perturbations=2)
    for a, b in zip(plain.parameters(), perturbed.parameters(), strict=True):
        assert torch.equal(a, b)
    p, q = BundleReader(tmp_path / "plain"), BundleReader(tmp_path / "pert")
    manifest = json.loads((tmp_path / "pert" / "manifest.json").read_text())
    assert manifest["variants"] == ["nominal", "perturbed-1", "perturbed-2"]
    assert manifest["perturbation"]["module"] == "embed"
    assert manifest["perturbation"]["relative_scale"] == torch.finfo(torch.float32).eps
    for identity in p.identities():
        assert (p.merged(identity) == q.merged(identity)).all(), identity
    key = ("nominal", 0, 0, "embed", "forward_output", "0")
    nominal, pert = q.merged(key), q.merged(("perturbed-1", *key[1:]))
    rel = abs(pert - nominal) / abs(nominal)
    # eps * |u| plus at most half an ulp from rounding back to float32
    assert 0 < rel.max() <= 1.5 * torch.finfo(torch.float32).eps


def test_whole_run_variants_each_start_from_the_same_optimizer_state(tmp_path: Path) -> None:
    """run_variants restores one snapshot K times. Mid-training the optimizer already has
    momentum buffers, and load_state_dict keeps the snapshot's tensors as its live state: a
    perturbed variant's in-place updates must not leak into the next variant or nominal."""
    data = torch.randn(3, 2, 3, 4, generator=torch.Generator().manual_seed(1))

    def run(out: Path, perturbations: int) -> Tiny:
        model = Tiny()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model(data[2, 0]).square().sum().backward()  # an untraced step: buffers exist
        opt.step()
        tracer = Tracer(model, opt, out, role="reference", perturbations=perturbations)
        for _ in tracer.run_variants():
            for it in range(2):
                opt.zero_grad()
                with tracer.step(it):
                    model(data[it, 0]).square().sum().backward()
                    opt.step()
        tracer.close()
        return model

    plain, perturbed = run(tmp_path / "plain", 0), run(tmp_path / "pert", 2)
    for a, b in zip(plain.parameters(), perturbed.parameters(), strict=True):
        assert torch.equal(a, b)


def test_candidate_cannot_have_perturbations(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only a reference"):
        Tracer(Tiny(), None, tmp_path / "b", role="candidate", perturbations=1)


def test_hook_failure_names_the_module(tmp_path: Path) -> None:
    model = Tiny()

    def broken(t: torch.Tensor):
        raise RuntimeError("no placement for you")

    annotate(model.mlp[2], outputs=broken)
    tracer = Tracer(model, None, tmp_path / "b", role="reference")
    with pytest.raises(TracerError, match=r"mlp\.2.*no placement"), tracer.step(0):
        model(torch.randn(3, 4))
    tracer.writer.close()
    with h5py.File(tmp_path / "b" / "rank-00000.h5", "r") as f:  # still a valid file
        assert "/nominal/iter_0/mb_0/embed/forward_output/0" in f


def test_writer_memory_cap_and_failure(tmp_path: Path) -> None:
    writer = AsyncWriter(BundleWriter(tmp_path, 0, 1, "reference"), memory_cap_bytes=1000)
    for i in range(10):
        key = TensorKey("nominal", 0, i, "m", "forward_output", "0")
        writer.put(key, torch.full((100,), float(i)), None)  # 400 bytes each
    writer.flush()
    assert writer.peak_pending_bytes <= 1000
    assert writer.tensors_written == 10
    dup = TensorKey("nominal", 0, 0, "m", "forward_output", "0")
    writer.put(dup, torch.zeros(3), None)
    with pytest.raises(TracerError, match=r"mb_0/m/forward_output/0.*already written"):
        writer.flush()
    with pytest.raises(TracerError):
        writer.put(TensorKey("nominal", 0, 99, "m", "forward_output", "0"), torch.zeros(1), None)
    with pytest.raises(TracerError):
        writer.close()
    with h5py.File(tmp_path / "rank-00000.h5", "r") as f:
        assert float(f["/nominal/iter_0/mb_9/m/forward_output/0"][0]) == 9.0


def test_implicit_iterations_follow_optimizer_steps(tmp_path: Path) -> None:
    model = Tiny()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = Tracer(model, opt, tmp_path / "b", role="reference", modules=["mlp.*"])
    tracer.start()
    for _ in range(2):
        opt.zero_grad()
        for _ in range(3):
            model(torch.randn(2, 4)).sum().backward()
        opt.step()
    tracer.close()
    ids = BundleReader(tmp_path / "b").identities()
    assert {(i[1], i[2]) for i in ids} == {(it, mb) for it in (0, 1) for mb in (-1, 0, 1, 2)}
    assert {i[3] for i in ids} == {"mlp.0", "mlp.1", "mlp.2"}
