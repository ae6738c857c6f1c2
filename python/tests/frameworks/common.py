"""Shared by the framework training scripts: process group, data, options.

Each script is what a user of that framework writes; its ttrace lines end in `# ttrace` so
that the test can count them. Run on one process it is the reference; under torchrun with
2 processes, the candidate. `--bug scale` multiplies one rank's partial sum by 1 + 1e-3
before its reduction, `--bug drop` drops one reduction.
"""

from __future__ import annotations

import argparse
import gc
import os

import torch
import torch.distributed as dist

VOCAB, HIDDEN, FFN, LAYERS, HEADS, KV_HEADS, SEQ, BATCH, STEPS = 64, 32, 64, 2, 4, 2, 8, 4, 2
BUG_SCALE = 1.0 + 1e-3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--bug", choices=["none", "scale", "drop", "forward"], default="none")
    return parser.parse_args()


def init() -> tuple[int, int]:
    """(rank, world size); a process group over gloo under torchrun."""
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
        return dist.get_rank(), world
    return 0, 1


def global_batch(step: int) -> torch.Tensor:
    """Token ids [BATCH, SEQ], the same on every rank and in the reference."""
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=g)


def local_rows(batch: torch.Tensor, rank: int, parts: int) -> torch.Tensor:
    """This data-parallel rank's rows (DistributedSampler-style contiguous slices)."""
    n = batch.shape[0] // parts
    return batch[rank * n : (rank + 1) * n]


def finish() -> None:
    """Tear the process group down once the training objects are gone: a DDP reducer still
    alive at `destroy_process_group` frees the gloo group at interpreter exit, whose thread
    join can hang."""
    gc.collect()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
