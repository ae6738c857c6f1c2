"""Resuming the example from a DCP checkpoint, with the bug zoo's resume bugs: each one is a
piece of training state a real resume path forgets to restore."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from . import checkpoint
from .checkpoint import Position
from .local_optimizer import LocalAdam
from .parallel_state import ParallelState


def resume(
    path: Path, model: nn.Module, optimizer: LocalAdam, ps: ParallelState, bugs: set[str]
) -> tuple[Position, dict[str, Any]]:
    """Load `path` into this rank's layout; returns the position to continue from and the
    record of the start the capture writes into the manifest (the checkpoint as given, even
    where a bug then discards part of what it restored)."""
    position = checkpoint.load(path, model, optimizer, ps)
    record = checkpoint.start_record(path, position)
    if "resume-optimizer-state-dropped" in bugs:
        # Bug zoo: only the model weights are taken from the checkpoint; the optimizer starts
        # fresh (zero Adam moments, step 0, masters from the loaded weights).
        with torch.no_grad():
            for m, v in zip(optimizer.exp_avg, optimizer.exp_avg_sq, strict=True):
                m.zero_()
                v.zero_()
        optimizer.step_count = 0
        optimizer.reload_model_params()
    if "resume-lr-restart" in bugs:
        # Bug zoo: the LR scheduler's state is not loaded; its warm-up starts again at step 0.
        position = Position(position.step, 0, position.data_iteration)
    if "resume-data-position" in bugs:
        # Bug zoo: the data iterator is rebuilt from the start of the stream, not skipped to
        # the saved position: the resumed run trains on batches it has already seen.
        position = Position(position.step, position.lr_step, 0)
    return position, record
