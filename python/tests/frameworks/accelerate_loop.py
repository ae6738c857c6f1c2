"""A training loop written for accelerate, as its docs show, on a tiny Llama; its ttrace
lines end in `# ttrace`. One process is the reference, torchrun with 2 processes the DDP
candidate (gloo, CPU); `ttrace capture` decides the role and variant.

`--bug scale|drop`: a DDP communication hook on the prepared model scales rank 1's partial
gradient of `layers.0.mlp.down_proj.weight` (or drops its reduction): the user's bug.
"""

from __future__ import annotations

import argparse
import os

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from torch.utils.data import DataLoader

from ttrace.integrations.accelerate import trace  # ttrace

from .common import BATCH, STEPS, finish
from .hf_model import tiny_llama
from .hf_trainer import TokenRows
from .reduction_bugs import break_ddp_reduction


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="ttrace-bundle")
    p.add_argument("--bug", choices=["none", "scale", "drop"], default="none")
    p.add_argument("--accumulate", type=int, default=2)
    a = p.parse_args()
    torch.use_deterministic_algorithms(True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=a.accumulate)
    set_seed(0)
    model = tiny_llama()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    # 8 rows per optimizer step: 2 per process and micro-batch in the candidate.
    loader = DataLoader(TokenRows(8 * BATCH), batch_size=2 * BATCH // world // a.accumulate)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    if a.bug != "none" and world > 1:
        break_ddp_reduction(model, model.module.model.layers[0].mlp.down_proj.weight, a.bug)
    tracer = trace(accelerator, model, optimizer, a.out)  # ttrace
    for step, batch in enumerate(loader):
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        if step + 1 == STEPS * a.accumulate:
            break
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    finish()
