"""torch `parallelize_module`: tensor parallelism with sequence parallelism on 2 ranks, the
plan of PyTorch's tensor-parallel tutorial (default styles, rowwise outputs sequence-sharded)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

import ttrace.capture as ttc  # ttrace

from .common import STEPS, finish, global_batch, init, parse_args
from .hf_model import break_row_parallel
from .tiny_model import Transformer


def parallelize(model: Transformer, world: int) -> None:
    mesh = init_device_mesh("cpu", (world,))
    top = {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
    }
    parallelize_module(model, mesh, top)
    for block in model.layers:
        plan = {
            "attention_norm": SequenceParallel(),
            "attention": PrepareModuleInput(
                input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)
            ),
            "attention.wq": ColwiseParallel(),
            "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(
                input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)
            ),
            "feed_forward.w1": ColwiseParallel(),
            "feed_forward.w3": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
        }
        parallelize_module(block, mesh, plan)


def main() -> None:
    args = parse_args()
    _, world = init()
    model = Transformer()
    if world > 1:
        if args.bug != "none":
            break_row_parallel(model.layers[0].feed_forward.w2, args.bug)
        parallelize(model, world)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ttc.seeded_init(model, seed=0)  # ttrace
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace

    def train_step(step: int) -> None:
        ids = global_batch(step)
        logits = model(ids)
        loss = F.cross_entropy(logits.flatten(0, 1), ids.roll(-1, dims=1).flatten())
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
