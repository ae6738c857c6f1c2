"""What a replay needs from the closed tracer, in one place: module names both ways,
parameter names, placement inference, call templates, precision."""

from __future__ import annotations

import contextlib
from typing import Any

import torch
from torch import nn

from ttrace.bundle import TensorKey

from .dtensor_local import local_of
from .errors import AgentError, ErrorCode
from .reference_feed import ReferenceFeed
from .result_placement import ResultPlacement


class ReplayContext:
    def __init__(self, tracer: Any, feed: ReferenceFeed, rank: int) -> None:
        self.tracer = tracer
        self.feed = feed
        self.rank = rank
        self.inference = tracer.inference
        self.placer = ResultPlacement(feed.own, tracer.inference)
        self.hooks = tracer.hooks
        self.recorder = tracer.recorder
        self.precision = tracer.precision
        self.by_name: dict[str, nn.Module] = {n: m for m, n in tracer.names.names.items()}

    def param_key(
        self, p: nn.Parameter, variant: str, iteration: int, mb: int, kind: str
    ) -> TensorKey:
        return TensorKey(variant, iteration, mb, self.param_id(p)[1], kind, self.param_id(p)[2])

    def param_id(self, p: nn.Parameter) -> tuple[nn.Module, str, str]:
        """(owner module, canonical module name, parameter name), as capture names it."""
        if p not in self.hooks.owner:
            raise AgentError(
                ErrorCode.NOT_REPLAYABLE,
                f"a parameter of shape {list(p.shape)} belongs to no captured module",
            )
        return self.hooks.param_name(p)

    def feed_parameters(self, params: list[nn.Parameter], variant: str, iteration: int) -> None:
        """Every parameter takes the reference's value of `iteration`, cut to this rank."""
        for p in params:
            shard = self.feed.shard(
                self.param_key(p, variant, iteration, -1, "parameter"), p.device
            )
            with torch.no_grad():
                local = local_of(p)
                local.copy_(shard.to(local.dtype))
            p.grad = None

    def precision_scope(self, device: torch.device) -> contextlib.AbstractContextManager:
        """The captured precision recipe's ambient context (bf16/fp8 live in the module and
        its parameters' dtypes; autocast is the one recipe set from outside)."""
        if self.precision == "bf16-autocast":
            return torch.autocast(device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()


def device_of(module: nn.Module) -> torch.device:
    for t in (*module.parameters(), *module.buffers()):
        return t.device
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def unique_params(module: nn.Module) -> list[nn.Parameter]:
    return list(dict.fromkeys(module.parameters()))
