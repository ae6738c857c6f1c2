"""torch.distributed.pipelining as its tutorial shows it: a tiny transformer-like model whose
layers live in a `ModuleDict` keyed by layer id, split into stages by deleting what the other
stages hold, each stage a `PipelineStage` driven by `ScheduleGPipe` or `Schedule1F1B` (one
stage per rank), or `ScheduleInterleaved1F1B` / `ScheduleLoopedBFS` with `--stages-per-rank 2`
(rank r holds stages r, r + pp, ...), all with the default `scale_grads=True`. Without
`--static-shapes` the stages infer their shapes at the first step (the tutorial's default);
with it, `input_args` and `output_args` declare them. `--dp 2` adds data parallelism, as
torchtitan composes it: a `("pp", "dp")` device mesh, each stage module wrapped (`--wrap
fsdp`: FSDP2 `fully_shard` on the `dp` mesh; `--wrap ddp`: `DistributedDataParallel` over the
`dp` group) before it becomes a stage on the `pp` group; each data-parallel rank takes its
share of every micro-batch. Run on one process it is the reference: the whole model, each
micro-batch's loss backward in turn, gradients divided by the number of micro-batches
before the optimizer step, as the schedule does. `--bug unscaled` makes the last stage skip
the schedule's gradient scaling (its gradients stay summed over micro-batches); `--bug
stale` makes the middle stage compute on the activation it received for the previous
micro-batch.
"""

from __future__ import annotations

import argparse
import copy
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.pipelining import (
    PipelineStage,
    Schedule1F1B,
    ScheduleGPipe,
    ScheduleInterleaved1F1B,
    ScheduleLoopedBFS,
)
from torch.nn.parallel import DistributedDataParallel

import ttrace.capture as ttc  # ttrace

VOCAB, HIDDEN, LAYERS, SEQ, BATCH, MICRO_BATCHES, STEPS = 32, 16, 4, 8, 4, 2, 2
SCHEDULES = {
    "gpipe": ScheduleGPipe,
    "1f1b": Schedule1F1B,
    "interleaved1f1b": ScheduleInterleaved1F1B,
    "loopedbfs": ScheduleLoopedBFS,
}


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


def static_shapes(stage: int, stages: int, rows: int) -> dict:
    """What a stage receives and sends, declared (`--static-shapes`)."""
    # Activations between stages carry gradients: the declared shapes say so.
    hidden = torch.zeros(rows, SEQ, HIDDEN, requires_grad=True)
    first = torch.zeros(rows, SEQ, dtype=torch.long) if stage == 0 else hidden
    last = torch.zeros(rows, SEQ, VOCAB, requires_grad=True) if stage == stages - 1 else hidden
    return {"input_args": (first,), "output_args": last}


def stale_handoff(stage: PipelineStage) -> None:
    """The bug `--bug stale`: from the second micro-batch on, this stage computes on the
    activation it received for the previous micro-batch (a receive buffer not refreshed)."""
    original = stage._retrieve_recv_activations

    def retrieve(chunk: int) -> tuple:
        args = original(chunk)
        if chunk > 0:
            with torch.no_grad():
                args[0].copy_(stage.args_recv_info[chunk - 1][0].buffer)
        return args

    stage._retrieve_recv_activations = retrieve


def pipelined(args: argparse.Namespace, model: Model, world: int) -> tuple:
    """This rank's stages (rank r holds stages r, r + pp, ...: the looped layout the
    multi-stage schedules expect) and the schedule driving them."""
    pp = world // args.dp
    mesh = init_device_mesh("cpu", (pp, args.dp), mesh_dim_names=("pp", "dp"))
    pp_rank, stages_total = mesh["pp"].get_local_rank(), pp * args.stages_per_rank
    rows = BATCH // args.dp // MICRO_BATCHES
    stages = []
    for index in range(pp_rank, stages_total, pp):
        module = split(copy.deepcopy(model), index, stages_total)
        if args.wrap == "fsdp":
            fully_shard(module, mesh=mesh["dp"])
        elif args.wrap == "ddp":
            module = DistributedDataParallel(module, process_group=mesh["dp"].get_group())
        shapes = static_shapes(index, stages_total, rows) if args.static_shapes else {}
        stage = PipelineStage(
            module, index, stages_total, torch.device("cpu"), group=mesh["pp"].get_group(), **shapes
        )
        if args.bug == "unscaled" and index == stages_total - 1:
            stage.scale_grads = lambda grad_scale_factor: None  # this stage forgets to scale
        if args.bug == "stale" and index == stages_total // 2:
            stale_handoff(stage)
        stages.append(stage)
    one = stages if args.stages_per_rank > 1 else stages[0]
    schedule = SCHEDULES[args.schedule](one, n_microbatches=MICRO_BATCHES, loss_fn=loss_fn)
    return stages, schedule, mesh["dp"].get_local_rank()


def local_rows(t: torch.Tensor, dp: int, dp_rank: int) -> torch.Tensor:
    """This data-parallel rank's share of each micro-batch: the reference's micro-batch m is
    the data-parallel ranks' micro-batches m side by side."""
    return torch.cat([mb.tensor_split(dp)[dp_rank] for mb in t.tensor_split(MICRO_BATCHES)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--schedule", choices=sorted(SCHEDULES), default="gpipe")
    parser.add_argument("--static-shapes", action="store_true")
    parser.add_argument("--stages-per-rank", type=int, default=1)
    parser.add_argument("--dp", type=int, default=1)
    parser.add_argument("--wrap", choices=["none", "fsdp", "ddp"], default="none")
    parser.add_argument("--bug", choices=["none", "unscaled", "stale"], default="none")
    args = parser.parse_args()
    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    model = Model()
    ttc.seeded_init(model, seed=0)  # ttrace
    if world > 1:
        dist.init_process_group("gloo")
        stages, schedule, dp_rank = pipelined(args, model, world)
        params = [p for stage in stages for p in stage.submod.parameters()]
        optimizer = torch.optim.AdamW(params, lr=1e-2)
    else:
        stages, schedule, dp_rank = None, None, 0
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    holds = {stage.stage_index for stage in stages or []}
    role = "reference" if world == 1 else "candidate"  # ttrace
    variants = 2 * (world == 1)  # ttrace
    tracer = ttc.Tracer(
        stages or model, optimizer, args.out, role=role, perturbations=variants
    )  # ttrace

    def train_step(step: int) -> None:
        x, y = batch(step)
        if schedule is None:
            pairs = zip(x.tensor_split(MICRO_BATCHES), y.tensor_split(MICRO_BATCHES), strict=True)
            for xs, ys in pairs:
                loss_fn(model(xs), ys).backward()
            for p in model.parameters():
                p.grad /= MICRO_BATCHES  # what the schedule's scale_grads does
        else:
            x, y = local_rows(x, args.dp, dp_rank), local_rows(y, args.dp, dp_rank)
            first, last = 0 in holds, len(stages) * (world // args.dp) - 1 in holds
            inputs = {"target": y} if last else {}
            schedule.step(*([x] if first else []), **inputs)
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
