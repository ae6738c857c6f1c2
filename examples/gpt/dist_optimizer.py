"""Distributed optimizer (ZeRO-1 style, after Megatron-LM's DistributedOptimizer).

All data-parallel-replicated parameters are laid end to end in one flat buffer; each rank of
the data-parallel group owns one contiguous, equal slice of it, keeps fp32 master values and
Adam moments only for that slice, reduces gradients into it (reduce-scatter) and all-gathers
the updated parameters. `_get_model_param_range_map(param)["param"]` gives the owned range of
a parameter's flattened local tensor, as in Megatron; ttrace reads it to place main grads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from . import comm
from .adam import AdamHyper, adam_update
from .local_optimizer import LocalAdam


@dataclass(frozen=True)
class Range:
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class DistributedOptimizer:
    def __init__(
        self,
        params: list[nn.Parameter],
        hyper: AdamHyper,
        dp_group,
        local_params: list[nn.Parameter] | None = None,
        bugs: set[str] | None = None,
    ) -> None:
        """`local_params` (expert weights, not replicated over the dp group) get plain Adam."""
        self.local = LocalAdam(local_params or [], hyper)
        self.params = params
        self.hyper = hyper
        self.group = dp_group
        self.bugs = bugs or set()
        self.step_count = 0
        n, me = comm.group_size(dp_group), comm.group_rank(dp_group)
        self.offsets: list[int] = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.numel = -(-total // n) * n  # padded so every rank owns the same count
        shard = self.numel // n
        self.owned = Range(me * shard, (me + 1) * shard)
        self.ranges: dict[nn.Parameter, Range] = {}
        for p, off in zip(params, self.offsets, strict=True):
            lo, hi = max(off, self.owned.start), min(off + p.numel(), self.owned.end)
            if lo < hi:
                self.ranges[p] = Range(lo - off, hi - off)
        flat = self._flatten([p.detach().float() for p in params])
        self.master = flat[self.owned.start : self.owned.end].clone()
        self.exp_avg = torch.zeros_like(self.master)
        self.exp_avg_sq = torch.zeros_like(self.master)
        self.grad_buffer = torch.zeros(self.numel)

    def _flatten(self, tensors: list[torch.Tensor]) -> torch.Tensor:
        out = torch.zeros(self.numel)
        for t, off in zip(tensors, self.offsets, strict=True):
            out[off : off + t.numel()] = t.reshape(-1)
        return out

    def _get_model_param_range_map(self, param: nn.Parameter) -> dict[str, Range]:
        return {"param": self.ranges[param]}

    def reduce_grads(self) -> None:
        """Sum main grads over the dp group into the owned slice (gloo has no reduce-scatter:
        all-reduce, then only the owned slice is considered valid). `param.main_grad` becomes
        a view of the buffer, as in Megatron."""
        self.grad_buffer.copy_(self._flatten([p.main_grad for p in self.params]))
        comm.all_reduce(self.grad_buffer, self.group)
        for p, off in zip(self.params, self.offsets, strict=True):
            p.main_grad = self.grad_buffer[off : off + p.numel()].view(p.shape)

    @torch.no_grad()
    def step(self) -> None:
        self.step_count += 1
        grad = self.grad_buffer[self.owned.start : self.owned.end]
        adam_update(self.master, grad, self.exp_avg, self.exp_avg_sq, self.step_count, self.hyper)
        # All-gather the updated slices (as an all-reduce of zero-padded buffers: exact).
        full = torch.zeros(self.numel)
        full[self.owned.start : self.owned.end] = self.master
        comm.all_reduce(full, self.group)
        offsets = self.offsets
        if "dist-opt-wrong-offset" in self.bugs:
            # Bug zoo: the param views are taken with the offsets of Megatron's reversed
            # bucket layout while this buffer is laid out in forward order.
            offsets = self._reversed_offsets()
        for p, off in zip(self.params, offsets, strict=True):
            p.copy_(full[off : off + p.numel()].view(p.shape))
        self.local.step()

    def _reversed_offsets(self) -> list[int]:
        out: list[int] = [0] * len(self.params)
        total = 0
        for i in reversed(range(len(self.params))):
            out[i] = total
            total += self.params[i].numel()
        return out

    def reload_model_params(self) -> None:
        """Copy the model parameters into the owned fp32 master slice (Megatron's name for
        it): after parameters were set from outside, e.g. by a localize replay of the step."""
        with torch.no_grad():
            flat = self._flatten([p.detach().float() for p in self.params])
            self.master.copy_(flat[self.owned.start : self.owned.end])
        self.local.reload_model_params()

    def zero_grad(self) -> None:
        self.local.zero_grad()
        for p in self.params:
            p.grad = None
            p.main_grad = None

    def state_dict(self) -> dict:
        return {
            "step": self.step_count,
            "master": self.master.clone(),
            "exp_avg": self.exp_avg.clone(),
            "exp_avg_sq": self.exp_avg_sq.clone(),
            "local": self.local.state_dict(),
        }

    def load_state_dict(self, sd: dict) -> None:
        self.step_count = sd["step"]
        self.master.copy_(sd["master"])
        self.exp_avg.copy_(sd["exp_avg"])
        self.exp_avg_sq.copy_(sd["exp_avg_sq"])
        self.local.load_state_dict(sd["local"])
