"""The torchtitan-style Llama 3 trained as its users train it: one process is the
reference; under torchrun, `--tp` ranks of tensor parallelism and the rest FSDP2 data
parallelism over a `(dp_shard, tp)` mesh. `--bug tp` scales one tensor-parallel rank's
row-parallel partial in `layers.0.feed_forward.w2`; `--bug fsdp` scales one data-parallel
rank's gradient in the reduce-scatter of block 0; `--bug lr` steps the last rank with a 1%
larger learning rate (what the optimizer-step tolerances must still see). `--eps` sets
AdamW's eps (bench/adam_eps_seeds.py sweeps it)."""

from __future__ import annotations

import argparse
import contextlib

import torch
import torch.nn.functional as F
from torch.distributed.tensor.parallel import loss_parallel

import ttrace.capture as ttc  # ttrace

from .common import STEPS, finish, global_batch, init, local_rows
from .reduction_bugs import break_fsdp_reduction
from .titan_model import ModelArgs, Transformer
from .titan_parallel import apply_fsdp, apply_tp, break_row_parallel, build_mesh

LR_BUG_SCALE = 1.01


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--loss-parallel", action="store_true")
    parser.add_argument("--bug", choices=["none", "tp", "fsdp", "lr"], default="none")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eps", type=float, default=1e-8)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    rank, world = init()
    model = Transformer(ModelArgs())
    dp, use_loss_parallel = world // args.tp, False
    if world > 1:
        mesh = build_mesh(dp, args.tp)
        if args.tp > 1:
            if args.bug == "tp":
                break_row_parallel(model.layers["0"].feed_forward.w2)
            use_loss_parallel = args.loss_parallel
            apply_tp(model, mesh["tp"], use_loss_parallel)
        if dp > 1:
            apply_fsdp(model, mesh["dp_shard"])
            if args.bug == "fsdp":
                break_fsdp_reduction(model.layers["0"], "scale")
    dp_rank = rank // args.tp
    ttc.seeded_init(model, seed=args.seed)  # ttrace
    lr = 1e-2 * (LR_BUG_SCALE if args.bug == "lr" and rank == world - 1 else 1.0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, eps=args.eps)
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace

    def train_step(step: int) -> None:
        batch = local_rows(global_batch(step), dp_rank, dp)
        labels = batch.roll(-1, dims=1)
        pred = model(batch)
        with loss_parallel() if use_loss_parallel else contextlib.nullcontext():
            loss = F.cross_entropy(pred.flatten(0, 1).float(), labels.flatten(0, 1))
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
