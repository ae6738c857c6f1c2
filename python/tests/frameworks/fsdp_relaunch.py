"""The tiny Llama-style transformer (`tiny_model`) under FSDP2 (`fully_shard` per block and at
the root) over every rank torchrun starts, as a user's script runs it whatever the device
count: a relaunch of the 2-rank job on one device still runs FSDP2, over a one-rank mesh, so
it holds each parameter whole where each captured rank held half. Per-rank mean loss,
gradients averaged by the reduce-scatter (its default). `--reference`: one process, no FSDP.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.fsdp import fully_shard

import ttrace.capture as ttc  # ttrace

from .common import STEPS, VOCAB, finish, global_batch, local_rows
from .tiny_model import Transformer


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", action="store_true")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    if "RANK" in os.environ:  # under torchrun, even with one process: FSDP2 needs its group
        dist.init_process_group("gloo")
    rank = dist.get_rank() if dist.is_initialized() else 0
    world = dist.get_world_size() if dist.is_initialized() else 1
    model = Transformer()
    if not args.reference:
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
    ttc.seeded_init(model, seed=0)  # ttrace
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    role = "reference" if args.reference else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * args.reference)  # ttrace

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
