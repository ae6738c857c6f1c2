"""torch.distributed.pipelining's `PipelineStage`, read as the job declares it.

`Tracer(stage, ...)` traces the stage's module (`stage.submod`); the stage says where it sits
(`stage_index` of `num_stages`, one stage per rank), so no `ParallelInfo` is needed.

With the tutorial's default dynamic shapes (a stage built without `input_args`), the first
`schedule.step()` runs the stage's module once more, on placeholder tensors, to infer the
shapes it sends and receives (`_forward_metadata_inference`, and `_backward_metadata_inference`
for gradients). That pass is no micro-batch: capture is suspended while it runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from torch import nn

from .capture_state import CaptureState
from .parallel_info import ParallelInfo

# The stage's shape-inference passes, by their names in torch 2.x releases.
_INFERENCE_PASSES = (
    "_forward_metadata_inference",
    "_backward_metadata_inference",
    "_shape_inference",
)


def _stage_base() -> type | None:
    try:
        from torch.distributed.pipelining.stage import _PipelineStageBase
    except ImportError:
        return None
    return _PipelineStageBase


def is_pipeline_stage(obj: Any) -> bool:
    base = _stage_base()
    return base is not None and isinstance(obj, base)


def stage_modules(model: Sequence[Any]) -> tuple[list[nn.Module], list[Any]]:
    """(the modules to trace, the pipelining stages among `model`)."""
    stages = [m for m in model if is_pipeline_stage(m)]
    return [m.submod if is_pipeline_stage(m) else m for m in model], stages


def stage_parallel(stages: list[Any], world_size: int) -> ParallelInfo | None:
    """The pipeline layout one stage per rank declares; None without stages. Raises
    ValueError for layouts it cannot place (several stages per rank, other parallelism)."""
    if not stages:
        return None
    if len(stages) > 1:
        raise ValueError(
            f"ttrace: {len(stages)} pipelining stages on one rank (a looped schedule): pass "
            "Tracer(parallel=ttrace.capture.ParallelInfo(pp=..., vpp=...))"
        )
    stage = stages[0]
    if stage.num_stages != world_size:
        raise ValueError(
            f"ttrace: pipelining stage {stage.stage_index} of {stage.num_stages} on "
            f"{world_size} ranks: pass Tracer(parallel=ttrace.capture.ParallelInfo(...)) "
            "for the other dimensions"
        )
    return ParallelInfo(pp=stage.num_stages, pp_rank=stage.stage_index)


def suspend_shape_inference(stages: list[Any], state: CaptureState) -> Callable[[], None]:
    """Suspend capture while a stage infers its shapes; returns what undoes it."""
    undo: list[Callable[[], None]] = []
    for stage in stages:
        for name in _INFERENCE_PASSES:
            original = getattr(stage, name, None)
            if original is None:
                continue
            setattr(stage, name, _suspended(original, state))
            undo.append(functools.partial(stage.__dict__.pop, name, None))
    return lambda: [u() for u in undo] and None


def _suspended(method: Callable[..., Any], state: CaptureState) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(*args: Any, **kwargs: Any) -> Any:
        was = state.in_step
        state.in_step = False
        try:
            return method(*args, **kwargs)
        finally:
            state.in_step = was

    return run
