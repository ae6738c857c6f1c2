"""torch `parallelize_module` (the tiny transformer's TP + SP plan of `torch_tp`) with a
learnable per-head offset on every attention output, built for the rank's own heads as a
plain parameter: split by heads over tensor parallelism, but nothing declares it (no DTensor,
no `tensor_model_parallel`), as megatron-core's attention-sink `softmax_offset` is.
`--reference DIR`: the reference bundle, which `seeded_init` reads to initialize the offset
by its shape; without it the offset starts as a replica."""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn

import ttrace.capture as ttc  # ttrace

from .common import HEADS, STEPS, finish, global_batch, init
from .tiny_model import Attention, Transformer
from .torch_tp import parallelize


class OffsetAttention(Attention):
    def __init__(self, tp: int) -> None:
        super().__init__()
        self.head_offset = nn.Parameter(torch.zeros(HEADS // tp))  # this rank's heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (
            w(x).view(b, s, -1, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv)
        )
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        o = o + self.head_offset.view(1, -1, 1, 1)
        return self.wo(o.transpose(1, 2).reshape(b, s, -1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--reference", default=None)
    args = parser.parse_args()
    rank, world = init()
    model = Transformer()
    for block in model.layers:
        block.attention = OffsetAttention(world)
    if world > 1:
        parallelize(model, world)
    # foreach=False: the optimizer holds DTensors and the plain offsets together.
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=False)
    info = ttc.ParallelInfo(tp=world, tp_rank=rank)  # ttrace
    ttc.seeded_init(model, seed=0, parallel=info, reference=args.reference)  # ttrace
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
