"""torch.distributed.pipelining as its tutorial shows it: a tiny transformer-like model whose
layers live in a `ModuleDict` keyed by layer id, split into 2 stages by deleting what the
other stage holds, each stage a `PipelineStage` driven by `ScheduleGPipe` or
`Schedule1F1B` (default `scale_grads=True`). Without `--static-shapes` the stages infer
their shapes at the first step (the tutorial's default); with it, `input_args` and
`output_args` declare them. Run on one process it is the reference: the whole model, each
micro-batch's loss backward in turn, gradients divided by the number of micro-batches
before the optimizer step, as the schedule does. `--bug unscaled` makes the last stage skip
the schedule's gradient scaling (its gradients stay summed over micro-batches).
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

import ttrace.capture as ttc  # ttrace

VOCAB, HIDDEN, LAYERS, SEQ, BATCH, MICRO_BATCHES, STEPS = 32, 16, 4, 8, 4, 2, 2


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(HIDDEN)
        self.fc1 = nn.Linear(HIDDEN, 2 * HIDDEN)
        self.fc2 = nn.Linear(2 * HIDDEN, HIDDEN)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.fc2(F.gelu(self.fc1(self.norm(h))))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok_embeddings: nn.Module | None = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleDict({str(i): Block() for i in range(LAYERS)})
        self.norm: nn.Module | None = nn.LayerNorm(HIDDEN)
        self.output: nn.Module | None = nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm is not None else h
        return self.output(h) if self.output is not None else h


def loss_fn(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))


def split(model: Model, stage: int, stages: int) -> Model:
    """The tutorial's manual split: keep this stage's layers, drop the rest."""
    per = LAYERS // stages
    for i in range(LAYERS):
        if not stage * per <= i < (stage + 1) * per:
            del model.layers[str(i)]
    if stage > 0:
        model.tok_embeddings = None
    if stage < stages - 1:
        model.norm = model.output = None
    return model


def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(10 + step)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


def pipelined(args: argparse.Namespace, model: Model, rank: int, world: int) -> tuple:
    stage_model = split(model, rank, world)
    mb = BATCH // MICRO_BATCHES
    shapes = {}
    if args.static_shapes:
        # Activations between stages carry gradients: the declared shapes say so.
        hidden = torch.zeros(mb, SEQ, HIDDEN, requires_grad=True)
        first = torch.zeros(mb, SEQ, dtype=torch.long) if rank == 0 else hidden
        last = torch.zeros(mb, SEQ, VOCAB, requires_grad=True) if rank == world - 1 else hidden
        shapes = {"input_args": (first,), "output_args": last}
    stage = PipelineStage(stage_model, rank, world, torch.device("cpu"), **shapes)
    schedule_type = ScheduleGPipe if args.schedule == "gpipe" else Schedule1F1B
    schedule = schedule_type(stage, n_microbatches=MICRO_BATCHES, loss_fn=loss_fn)
    if args.bug == "unscaled" and rank == world - 1:
        stage.scale_grads = lambda grad_scale_factor: None  # this stage forgets to scale
    return stage, schedule


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--schedule", choices=["gpipe", "1f1b"], default="gpipe")
    parser.add_argument("--static-shapes", action="store_true")
    parser.add_argument("--bug", choices=["none", "unscaled"], default="none")
    args = parser.parse_args()
    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    model = Model()
    ttc.seeded_init(model, seed=0)  # ttrace
    if world > 1:
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        stage, schedule = pipelined(args, model, rank, world)
        optimizer = torch.optim.AdamW(stage.submod.parameters(), lr=1e-2)
    else:
        rank, stage, schedule = 0, None, None
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    role = "reference" if world == 1 else "candidate"  # ttrace
    variants = 2 * (world == 1)  # ttrace
    tracer = ttc.Tracer(
        stage or model, optimizer, args.out, role=role, perturbations=variants
    )  # ttrace

    def train_step(step: int) -> None:
        x, y = batch(step)
        if schedule is None:
            pairs = zip(x.tensor_split(MICRO_BATCHES), y.tensor_split(MICRO_BATCHES), strict=True)
            for xs, ys in pairs:
                loss_fn(model(xs), ys).backward()
            for p in model.parameters():
                p.grad /= MICRO_BATCHES  # what the schedule's scale_grads does
        elif rank == 0:
            schedule.step(x)
        else:
            schedule.step(target=y)
        optimizer.step()
        optimizer.zero_grad()

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                train_step(step)  # ttrace
    tracer.close()  # ttrace
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
