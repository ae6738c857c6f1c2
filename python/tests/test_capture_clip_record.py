"""The manifest's `gradient_clipping` section: the global gradient norm and clip coefficient of
each captured step, recorded where torch computes them (`clip_grad_norm_`, and
`clip_grads_with_norm_` with a norm computed elsewhere, as torchtitan does); none for a run that
never clips, and the functions are torch's own again after `close()`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ttrace.capture import Tracer

ClipFn = Callable[[list[nn.Parameter]], torch.Tensor | None]


def train(out: Path, clip: ClipFn, captured: tuple[int, ...] = (1, 2)) -> tuple[dict, list]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    tracer = Tracer(model, opt, out, role="reference", iterations=list(captured))
    norms = []
    for it in range(3):
        opt.zero_grad()
        with tracer.step(it):
            (10 * model(torch.randn(3, 4))).square().sum().backward()
            norm = clip(list(model.parameters()))
            norms.append(None if norm is None else float(norm))
            opt.step()
    tracer.close()
    return json.loads((out / "manifest.json").read_text()), norms


def test_clip_grad_norm_is_recorded_per_captured_step(tmp_path: Path) -> None:
    original = torch.nn.utils.clip_grad._clip_grads_with_norm_
    manifest, norms = train(tmp_path / "b", lambda ps: nn.utils.clip_grad_norm_(ps, 0.5))
    steps = manifest["gradient_clipping"]["steps"]
    assert [s["iteration"] for s in steps] == [1, 2]
    for s, norm in zip(steps, norms[1:], strict=True):
        assert s["variant"] == "nominal" and s["max_norm"] == 0.5
        assert math.isclose(s["total_norm"], norm, rel_tol=1e-7)
        assert math.isclose(s["coefficient"], min(0.5 / (norm + 1e-6), 1.0), rel_tol=1e-12)
        assert s["coefficient"] < 1.0  # it clipped
        assert s["source"] == "torch.nn.utils.clip_grads_with_norm_"
    assert torch.nn.utils.clip_grad._clip_grads_with_norm_ is original


def test_a_norm_computed_elsewhere_is_recorded_where_it_is_applied(tmp_path: Path) -> None:
    def clip(params: list[nn.Parameter]) -> torch.Tensor:
        norm = nn.utils.get_total_norm([p.grad for p in params])
        nn.utils.clip_grads_with_norm_(params, 1e9, norm)  # never clips: coefficient 1
        return norm

    manifest, norms = train(tmp_path / "b", clip, captured=(0,))
    (step,) = manifest["gradient_clipping"]["steps"]
    assert step["iteration"] == 0 and step["coefficient"] == 1.0
    assert math.isclose(step["total_norm"], norms[0], rel_tol=1e-7)


def test_no_section_without_clipping(tmp_path: Path) -> None:
    manifest, _ = train(tmp_path / "b", lambda ps: None)
    assert "gradient_clipping" not in manifest
