"""The manifest's `gradient_clipping` section: the global gradient norm and clip coefficient of
each captured step, recorded where torch computes them (`clip_grad_norm_`, and
`clip_grads_with_norm_` with a norm computed elsewhere, as torchtitan does), or through
`record_gradient_clip` by a program that clips by its own code; none for a run that never clips,
and the functions are torch's own again after `close()`, also after two tracers alive at once
closed out of order."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from ttrace.capture import Tracer, record_gradient_clip

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


def test_a_clipping_of_the_programs_own_is_recorded_through_the_api(tmp_path: Path) -> None:
    def clip(params: list[nn.Parameter]) -> torch.Tensor:
        norm = torch.stack([p.grad.norm() for p in params]).norm()
        coefficient = 0.5 / (float(norm) + 1e-6)
        if coefficient < 1.0:
            for p in params:
                p.grad.mul_(coefficient)
        record_gradient_clip(norm, 0.5, source="tests.own_clip")
        return norm

    manifest, norms = train(tmp_path / "b", clip)
    steps = manifest["gradient_clipping"]["steps"]
    assert [(s["iteration"], s["source"]) for s in steps] == [
        (1, "tests.own_clip"),
        (2, "tests.own_clip"),
    ]
    for s, norm in zip(steps, norms[1:], strict=True):
        assert math.isclose(s["total_norm"], norm, rel_tol=1e-7)
        assert s["coefficient"] < 1.0


def test_outside_a_tracer_the_api_records_nothing() -> None:
    record_gradient_clip(torch.tensor(3.0), 1.0)  # no tracer open: nothing to record into


def _step(tracer: Tracer, model: nn.Module, it: int) -> None:
    with tracer.step(it):
        model(torch.randn(3, 4)).square().sum().backward()
        nn.utils.clip_grad_norm_(list(model.parameters()), 1e-3)


def test_two_tracers_closed_out_of_order_leave_torch_as_it_was(tmp_path: Path) -> None:
    original = torch.nn.utils.clip_grad._clip_grads_with_norm_
    first, second = nn.Linear(4, 2), nn.Linear(4, 2)
    a = Tracer(first, None, tmp_path / "a", role="reference", iterations=[0])
    b = Tracer(second, None, tmp_path / "b", role="reference", iterations=[0, 1])
    _step(a, first, 0)
    _step(b, second, 0)
    a.close()  # the first one closes first: the second still records
    assert torch.nn.utils.clip_grad._clip_grads_with_norm_ is not original
    _step(b, second, 1)
    b.close()
    assert torch.nn.utils.clip_grad._clip_grads_with_norm_ is original
    steps_a = json.loads((tmp_path / "a" / "manifest.json").read_text())["gradient_clipping"]
    steps_b = json.loads((tmp_path / "b" / "manifest.json").read_text())["gradient_clipping"]
    # Each tracer recorded the clip calls of its own steps, once each.
    assert [s["iteration"] for s in steps_a["steps"]] == [0]
    assert [s["iteration"] for s in steps_b["steps"]] == [0, 1]
