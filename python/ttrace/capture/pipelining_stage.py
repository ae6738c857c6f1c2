"""torch.distributed.pipelining's `PipelineStage`, read as the job declares it.

`Tracer(stage, ...)` traces the stage's module (`stage.submod`); the stage says where it sits,
so no `ParallelInfo` is needed: its pipeline group (`group_size`, `group_rank`) is the pipeline
dimension, and its modules' names are already the whole model's (the tutorial's split deletes
what other stages hold and keeps the global keys of the layer dict). Schedules with several
stages per rank (`ScheduleInterleaved1F1B`, `ScheduleLoopedBFS`) take the list of this rank's
stages, and so does `Tracer(stages, ...)`: each stage's module is one model chunk. Where the
pipeline group is smaller than the job, the stage modules' own wrappers (FSDP2 `fully_shard`
on a named `("pp", "dp")` mesh, `DistributedDataParallel` over a data-parallel group) say the
other dimensions (`parallel_detect`).

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
from .parallel_detect import detect_parallel
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


def pipeline_coords(stages: list[Any]) -> tuple[int, int]:
    """(pipeline size, this rank's place in it) that this rank's stages declare; raises
    ValueError when they disagree (stages of several pipeline groups on one rank)."""
    first = stages[0]
    for stage in stages[1:]:
        if (stage.group_size, stage.group_rank, stage.num_stages) != (
            first.group_size,
            first.group_rank,
            first.num_stages,
        ):
            raise ValueError(
                f"ttrace: pipelining stages {first.stage_index} and {stage.stage_index} on this "
                f"rank sit in different pipelines (group rank {first.group_rank} of "
                f"{first.group_size}, {first.num_stages} stages; group rank {stage.group_rank} of "
                f"{stage.group_size}, {stage.num_stages} stages): pass one pipeline's stages"
            )
    if first.num_stages % first.group_size:
        raise ValueError(
            f"ttrace: {first.num_stages} pipelining stages over {first.group_size} ranks: "
            "every rank must hold as many stages"
        )
    return first.group_size, first.group_rank


def stage_parallel(
    stages: list[Any], modules: list[nn.Module], rank: int, world_size: int
) -> ParallelInfo | None:
    """The layout the pipelining stages declare, with what the stage modules' wrappers say
    about the other dimensions (`modules`: the stages' modules as given, wrappers
    included); None without stages. Raises ValueError for layouts it cannot place."""
    if not stages:
        return None
    pp, pp_rank = pipeline_coords(stages)
    if pp == world_size:
        return ParallelInfo(pp=pp, pp_rank=pp_rank)
    return detect_parallel(modules, rank, world_size, pipeline=(pp, pp_rank))


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
