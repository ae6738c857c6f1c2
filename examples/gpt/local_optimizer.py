"""Non-sharded Adam over fp32 master copies of the parameters; consumes `param.main_grad`."""

from __future__ import annotations

import torch
from torch import nn

from .adam import AdamHyper, adam_update


class LocalAdam:
    def __init__(self, params: list[nn.Parameter], hyper: AdamHyper) -> None:
        self.params = params
        self.hyper = hyper
        self.step_count = 0
        self.master = [p.detach().float().clone() for p in params]
        self.exp_avg = [torch.zeros_like(m) for m in self.master]
        self.exp_avg_sq = [torch.zeros_like(m) for m in self.master]

    @torch.no_grad()
    def step(self) -> None:
        self.step_count += 1
        for p, master, m, v in zip(
            self.params, self.master, self.exp_avg, self.exp_avg_sq, strict=True
        ):
            adam_update(master, p.main_grad, m, v, self.step_count, self.hyper)
            p.copy_(master)

    def reload_model_params(self) -> None:
        """Copy the model parameters into the fp32 masters (Megatron's name for it): after
        parameters were set from outside, e.g. by a localize replay of the optimizer step."""
        with torch.no_grad():
            for p, master in zip(self.params, self.master, strict=True):
                master.copy_(p.detach().float())

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None
            p.main_grad = None

    def state_dict(self) -> dict:
        return {
            "step": self.step_count,
            "master": [t.clone() for t in self.master],
            "exp_avg": [t.clone() for t in self.exp_avg],
            "exp_avg_sq": [t.clone() for t in self.exp_avg_sq],
        }

    def load_state_dict(self, sd: dict) -> None:
        self.step_count = sd["step"]
        for name in ("master", "exp_avg", "exp_avg_sq"):
            for dst, src in zip(getattr(self, name), sd[name], strict=True):
                dst.copy_(src)
