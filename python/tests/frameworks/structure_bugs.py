"""A small transformer-like model whose candidate changes the structure of one module, under
`DistributedDataParallel` on 2 ranks (one process: the reference).

- `drop_bias_output`: `layers.0.proj`, a skip-bias-add projection (it returns its output and
  its bias, and the caller adds the bias, as Megatron-core's row-parallel layers do), adds its
  bias before returning and returns no bias: the shape of Megatron's bias-added-before-the-
  reduce bug, whose call then has one output fewer (and the bias counted twice, as over two
  tensor-parallel partial sums).
- `flatten_output`: `layers.1.proj` returns its output flattened to `[tokens, hidden]`; the
  caller views it back, so the numbers are right but the module's output has another shape.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ttrace.capture as ttc  # ttrace

from .common import HIDDEN, STEPS, VOCAB, finish, global_batch, init, local_rows

BUGS = ("none", "drop_bias_output", "flatten_output")


class SkipBiasProj(nn.Module):
    """`(x W^T, b)`: the caller adds the bias (Megatron's skip-bias-add)."""

    def __init__(self, bug: str) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(HIDDEN, HIDDEN) / HIDDEN**0.5)
        self.bias = nn.Parameter(torch.randn(HIDDEN) * 0.1)
        self.bug = bug

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        out = F.linear(x, self.weight)
        if self.bug == "drop_bias_output":
            return out + 2 * self.bias, None
        if self.bug == "flatten_output":
            return out.reshape(-1, HIDDEN), self.bias
        return out, self.bias


class Layer(nn.Module):
    def __init__(self, bug: str) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.proj = SkipBiasProj(bug)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, bias = self.proj(self.norm(x))
        out = out.view_as(x)
        return x + (out if bias is None else out + bias)


class Model(nn.Module):
    def __init__(self, bug: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(
            [
                Layer(bug if bug == "drop_bias_output" else "none"),
                Layer(bug if bug == "flatten_output" else "none"),
            ]
        )
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids)
        for layer in self.layers:
            h = layer(h)
        return self.head(h)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--bug", choices=BUGS, default="none")
    args = parser.parse_args()
    rank, world = init()
    model: nn.Module = Model(args.bug)
    ttc.seeded_init(model, seed=0)  # ttrace
    if world > 1:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace

    def train_step(step: int) -> None:
        ids = local_rows(global_batch(step), rank, world)
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad()

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                train_step(step)  # ttrace
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    finish()  # after main's models are freed: see common.finish
