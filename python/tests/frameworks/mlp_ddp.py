"""The first thing a new user tries: a tiny MLP with LayerNorm, batch-first activations
(`[batch, features]`, or `[batch, seq, features]` with `--tokens`), plain
`DistributedDataParallel` on gloo, and the README's capture lines unchanged. Run on one
process it is the reference; under torchrun, the candidate. `--bug sum` registers a DDP
communication hook that sums gradients instead of averaging them. `--seq-first` feeds
sequence-first `[seq, batch, features]` activations under DDP's default `dim=0` (DDP only
scatters inputs on it; the model is free to lay them out otherwise); `--fsdp` shards the model
with FSDP2's `fully_shard` instead of DDP."""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.fsdp import fully_shard
from torch.nn.parallel import DistributedDataParallel as DDP

import ttrace.capture as ttc  # ttrace

from .common import finish
from .reduction_bugs import sum_ddp_gradients

BATCH, SEQ, FEATURES, HIDDEN, STEPS = 8, 4, 16, 32, 2


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(FEATURES, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(HIDDEN, FEATURES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.norm(self.fc1(x))))


def batches(
    tokens: bool, rank: int, world: int, seq_first: bool = False
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """This rank's rows of each step's global batch (DistributedSampler-style)."""
    out = []
    for step in range(STEPS):
        g = torch.Generator().manual_seed(100 + step)
        shape = (BATCH, SEQ, FEATURES) if tokens else (BATCH, FEATURES)
        x, y = torch.randn(shape, generator=g), torch.randn(shape, generator=g)
        n = BATCH // world
        x, y = x[rank * n : (rank + 1) * n], y[rank * n : (rank + 1) * n]
        if seq_first:
            x, y = x.transpose(0, 1).contiguous(), y.transpose(0, 1).contiguous()
        out.append((x, y))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tokens", action="store_true", help="[batch, seq, features] inputs")
    parser.add_argument("--bug", choices=["none", "sum"], default="none")
    parser.add_argument("--seq-first", action="store_true", help="[seq, batch, features]")
    parser.add_argument("--fsdp", action="store_true", help="FSDP2 instead of DDP")
    args = parser.parse_args()
    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = 0
    model: nn.Module = MLP()
    if world > 1:
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        if args.fsdp:
            fully_shard(model)
            # gloo has no PREMUL_SUM: FSDP2's own switch to a plain sum and a division,
            # which reduces to the same average.
            model.set_force_sum_reduction_for_comms(True)
        else:
            model = DDP(model)
        if args.bug == "sum":
            sum_ddp_gradients(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    role = "reference" if world == 1 else "candidate"

    info = ttc.ParallelInfo(dp=world, dp_rank=rank)  # ttrace
    ttc.seeded_init(model, seed=1234, parallel=info)  # ttrace
    variants = 2 if role == "reference" else 0  # ttrace
    tracer = ttc.Tracer(  # ttrace: the README's lines
        model,
        optimizer,
        args.out,
        role=role,
        iterations=[0, 1],
        parallel=info,
        perturbations=variants,
    )
    for _ in tracer.run_variants():  # ttrace
        data = batches(args.tokens or args.seq_first, rank, world, args.seq_first)
        for it, (x, y) in enumerate(data):
            with tracer.step(it):  # ttrace
                loss = F.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    finish()
