"""The capture's size estimate: said once at Tracer start on rank 0, refined once with the
bytes the first captured iteration really wrote."""

from __future__ import annotations

import logging
from pathlib import Path

import h5py
import pytest
import torch
from torch import nn

from ttrace.capture import ParallelInfo, Tracer


class Wide(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.a = nn.Linear(64, 128)
        self.b = nn.Linear(128, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def run(out: Path, caplog: pytest.LogCaptureFixture, **kw) -> list[str]:
    """Two captured iterations of Adam on `Wide`; the capture's log lines."""
    model = Wide()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    caplog.clear()
    role = "candidate" if "parallel" in kw else "reference"
    tracer = Tracer(model, opt, out, role=role, **kw)
    x = torch.randn(2, 16, 64, generator=torch.Generator().manual_seed(1))
    for it in range(2):
        opt.zero_grad()
        with tracer.step(it):
            model(x[it]).square().sum().backward()
            opt.step()
    tracer.close()
    return [r.getMessage() for r in caplog.records if r.name == "ttrace.capture"]


def iteration_bytes(rank_file: Path, iteration: int) -> int:
    total = 0

    def visit(name: str, obj: object) -> None:
        nonlocal total
        if isinstance(obj, h5py.Dataset) and name.startswith(f"nominal/iter_{iteration}/"):
            total += obj.nbytes

    with h5py.File(rank_file) as f:
        f.visititems(visit)
    return total


def test_estimate_at_start_then_measured_once(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ttrace.capture")
    lines = run(tmp_path / "b", caplog, iterations=[0, 1])
    estimates = [x for x in lines if "capture estimate" in x]
    measured = [x for x in lines if "capture measured" in x]
    assert len(estimates) == 1 and len(measured) == 1, lines
    # Parameters of a and b: (64*128 + 128 + 128*32 + 32) float32 = 49.8 kB; per iteration
    # the parameter, its gradient, main gradient, after-step value and two Adam states.
    params = (64 * 128 + 128 + 128 * 32 + 32) * 4
    assert f"{6 * params / 1e3:.1f} kB per captured iteration" in estimates[0]
    assert f"2 iteration(s) x 1 variant(s): at least {12 * params / 1e3:.1f} kB" in estimates[0]
    written = iteration_bytes(tmp_path / "b" / "rank-00000.h5", 0)
    assert written > 6 * params  # activations come on top of the parameters
    assert f"{written / 1e3:.1f} kB in iteration 0" in measured[0], (measured, written)
    assert f"about {2 * written / 1e3:.1f} kB per rank" in measured[0]


def test_unconfigured_logging_still_shows_it(tmp_path: Path, caplog) -> None:
    """No logging configured: only warnings reach stderr, so the estimate is one there."""
    caplog.set_level(logging.WARNING)  # what an unconfigured program's root logger lets by
    model = Wide()
    Tracer(model, None, tmp_path / "b", role="reference").close()
    shown = [r for r in caplog.records if "capture estimate" in r.getMessage()]
    assert [r.levelno for r in shown] == [logging.WARNING]
    assert "every iteration is captured" in shown[0].getMessage()


def test_only_rank_zero_says_it(tmp_path: Path, caplog) -> None:
    caplog.set_level(logging.INFO, logger="ttrace.capture")
    parallel = ParallelInfo(dp=2, dp_rank=1, grad_reduce="sum")
    lines = run(tmp_path / "b", caplog, iterations=[0], rank=1, world_size=2, parallel=parallel)
    assert not [x for x in lines if "capture estimate" in x or "capture measured" in x]
