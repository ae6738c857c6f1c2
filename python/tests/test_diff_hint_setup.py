"""Bug-class hints name only what the candidate's declared setup allows, through the real
`ttrace diff`: a learning-rate bug (only the optimizer step diverges) on a 2-rank candidate
whose main gradients and parameters are held as flat ranges. Declaring nothing, the flat ranges
read as a distributed optimizer and the step's divergence is hinted `dist-opt-wrong-offset`;
declaring an unsharded optimizer (the manifest's `optimizer_sharding`, as the capture writes it
for torch's own optimizers), that class is never named and the hint points at the update
itself; a malformed declaration is one `manifest-optimizer` warning and the placements decide.
And the capture declares it: torch's Adam, unsharded."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_paths import ttrace_binary
from torch import nn

from ttrace.bundle import BundleWriter, Placement, TensorKey, write_manifest
from ttrace.capture import Tracer

SHAPE, LR = (8, 6), 1e-2
MODULES = [{"name": "fc", "order": 0, "depth": 0, "type": "Linear"}]


def sgd(p: np.ndarray, g: np.ndarray, lr: float = LR) -> np.ndarray:
    return p - lr * g


def reference(out: Path, p: np.ndarray, g: np.ndarray, rng: np.random.Generator) -> Path:
    variants = {"nominal": g}
    for k in (1, 2):
        variants[f"perturbed-{k}"] = g + 1e-7 * np.abs(g).mean() * rng.standard_normal(SHAPE)
    with BundleWriter(out, 0, 1, "reference") as w:
        for variant, grad in variants.items():
            w.write(TensorKey(variant, 0, -1, "fc", "main_grad", "weight"), grad.astype(np.float32))
            after = sgd(p, grad).astype(np.float32)
            w.write(TensorKey(variant, 0, -1, "fc", "param_after_step", "weight"), after)
        record = w.close()
    write_manifest(
        out, role="reference", world_size=1, parallel={}, precision="fp32",
        variants=list(variants), modules=MODULES, iterations=[0], micro_batches=1,
        ranks=[record],
    )  # fmt: skip
    return out


def flat_candidate(out: Path, p: np.ndarray, g: np.ndarray, sharding: dict | None) -> Path:
    """Two ranks, each holding half of the flattened tensors; the step's lr 1% too large."""
    half = g.size // 2
    records = []
    for rank in (0, 1):
        with BundleWriter(out, rank, 2, "candidate", {"dp": rank}) as w:
            start = rank * half
            place = Placement.flat(SHAPE, [(0, start, half)])
            for kind, full in (("main_grad", g), ("param_after_step", sgd(p, g, 1.01 * LR))):
                local = full.reshape(-1)[start : start + half].astype(np.float32)
                w.write(TensorKey("nominal", 0, -1, "fc", kind, "weight"), local, place)
            records.append(w.close())
    write_manifest(
        out, role="candidate", world_size=2, parallel={"dp": 2}, precision="fp32",
        variants=["nominal"], modules=MODULES, iterations=[0], micro_batches=1, ranks=records,
        optimizer_sharding=sharding,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    rng = np.random.default_rng(11)
    p = rng.standard_normal(SHAPE)
    g = rng.standard_normal(SHAPE)
    work = tmp_path_factory.mktemp("hints")
    unsharded = {"sharded": False, "source": "torch.optim.sgd.SGD"}
    return {
        "ref": reference(work / "ref", p, g, rng),
        "undeclared": flat_candidate(work / "undeclared", p, g, None),
        "unsharded": flat_candidate(work / "unsharded", p, g, unsharded),
        "malformed": flat_candidate(work / "malformed", p, g, {"sharded": "no"}),
    }


def step_hint(ref: Path, cand: Path, out: list[str] | None = None) -> dict:
    report = cand.parent / f"{cand.name}.json"
    cmd = [str(ttrace_binary()), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    if out is not None:
        out.append(proc.stdout + proc.stderr)
    rep = json.loads(report.read_text())
    (after,) = [t for t in rep["tensors"] if t["id"]["kind"] == "param_after_step"]
    assert after["status"] == "divergent", after
    assert all(t["status"] == "clean" for t in rep["tensors"] if t["id"]["kind"] == "main_grad")
    return after["hint"]


def test_undeclared_flat_ranges_read_as_a_distributed_optimizer(runs: dict[str, Path]) -> None:
    assert step_hint(runs["ref"], runs["undeclared"])["bug_class"] == "dist-opt-wrong-offset"


def test_a_declared_unsharded_optimizer_is_never_hinted_as_one(runs: dict[str, Path]) -> None:
    hint = step_hint(runs["ref"], runs["unsharded"])
    assert hint["bug_class"] != "dist-opt-wrong-offset", hint
    assert "learning rate" in hint["text"], hint


def test_a_malformed_declaration_is_named_and_the_placements_decide(
    runs: dict[str, Path],
) -> None:
    out: list[str] = []
    assert step_hint(runs["ref"], runs["malformed"], out)["bug_class"] == "dist-opt-wrong-offset"
    assert "optimizer_sharding needs a boolean 'sharded'" in out[0], out[0]


def test_the_capture_declares_torchs_optimizer_unsharded(tmp_path: Path) -> None:
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    tracer = Tracer(model, opt, tmp_path / "b", role="reference", iterations=[0])
    with tracer.step(0):
        model(torch.randn(3, 4)).sum().backward()
        opt.step()
    tracer.close()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["optimizer_sharding"] == {"sharded": False, "source": "torch.optim.adam.Adam"}
