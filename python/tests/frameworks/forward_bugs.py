"""An injected forward bug: one module's output scaled by 1 + 1e-3 on rank 1 (a wrong
kernel or a mis-scaled partial result on one rank), for the localize tests."""

from __future__ import annotations

from typing import Any

import torch.distributed as dist
from torch import nn

from .common import BUG_SCALE


def scale_output_on_rank_1(module: nn.Module) -> None:
    def hook(_module: nn.Module, _args: Any, output: Any) -> Any:
        return output * BUG_SCALE if dist.get_rank() == 1 else output

    module.register_forward_hook(hook)
