"""The tiny Llama-style transformer (`tiny_model`) under FSDP2 (`fully_shard` per block and at
the root) on 2 ranks, with torchtitan's loss convention: every rank's loss is its tokens'
summed cross-entropy divided by the global token count, and FSDP2 is told not to divide
(`set_gradient_divide_factor(1.0)` on every FSDP module): the reduce-scatter sums.

`--declare mean`: the program declares the other convention (`ParallelInfo(grad_reduce=
"mean")`), a declaration that does not fit the job: the run is still correct. `--bug
local-tokens`: every rank divides by its own token count instead (a loss scaled by local
token counts): the reduced gradients are dp times too large.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch.distributed.fsdp import FSDPModule, fully_shard

import ttrace.capture as ttc  # ttrace

from .common import STEPS, VOCAB, finish, global_batch, init, local_rows
from .tiny_model import Transformer


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--declare", choices=["none", "mean"], default="none")
    parser.add_argument("--bug", choices=["none", "local-tokens"], default="none")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    rank, world = init()
    model = Transformer()
    if world > 1:
        for layer in model.layers:
            fully_shard(layer)
        fully_shard(model)
        for module in model.modules():
            if isinstance(module, FSDPModule):
                module.set_gradient_divide_factor(1.0)
                # Gloo has no PREMUL_SUM (what NCCL would run for the factor): FSDP2's own
                # setting makes it a SUM followed by a division by the factor (here none).
                module.set_force_sum_reduction_for_comms(True)
    ttc.seeded_init(model, seed=0)  # ttrace
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    declared = ttc.ParallelInfo(dp=world, dp_rank=rank, grad_reduce="mean")  # ttrace
    parallel = declared if args.declare == "mean" else None  # ttrace
    role = "reference" if world == 1 else "candidate"  # ttrace
    perturbations = 2 * (world == 1)  # ttrace
    tracer = ttc.Tracer(
        model, opt, args.out, role=role, parallel=parallel, perturbations=perturbations
    )  # ttrace

    def train_step(step: int) -> None:
        batch = global_batch(step)
        ids = local_rows(batch, rank, world)
        inputs, labels = ids[:, :-1], ids[:, 1:]
        tokens = labels.numel() if args.bug == "local-tokens" else batch[:, 1:].numel()
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1), reduction="sum")
        (loss / tokens).backward()
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
