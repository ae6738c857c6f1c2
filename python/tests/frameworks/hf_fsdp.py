"""Hugging Face Llama under FSDP2 (`fully_shard` per decoder layer and on the root) on 2
ranks: per-rank mean loss, gradients averaged by the reduce-scatter (its default)."""

from __future__ import annotations

import torch
from torch.distributed.fsdp import fully_shard

import ttrace.capture as ttc  # ttrace

from .common import STEPS, finish, global_batch, init, local_rows, parse_args
from .forward_bugs import scale_output_on_rank_1
from .hf_model import tiny_llama
from .reduction_bugs import break_fsdp_reduction


def main() -> None:
    args = parse_args()
    rank, world = init()
    model = tiny_llama()
    if world > 1:
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)
        if args.bug == "forward":
            scale_output_on_rank_1(model.model.layers[1].mlp.down_proj)
        elif args.bug != "none":
            break_fsdp_reduction(model.model.layers[0], args.bug)
    ttc.seeded_init(model, seed=0)  # ttrace
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace

    def train_step(step: int) -> None:
        ids = local_rows(global_batch(step), rank, world)
        loss = model(input_ids=ids, labels=ids).loss
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
