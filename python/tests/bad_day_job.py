"""A small DDP job on gloo for the capture-on-a-bad-day tests, one process per rank started
by the test (as srun or mpirun start them: torchrun's agent would kill every rank as soon as
one dies, and the point is a rank killed while the others live).

Scenarios: `normal` (closes), `kill` (the last rank SIGKILLs itself right after its last
step, while its writer still writes that step; the others go on to close()), `no-close`
(every rank exits without close()). `--on-write-error` and `--timeout` are the Tracer's.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ttrace.capture as ttc
from ttrace.capture.close_rendezvous import RanksMissing

SEQ, BATCH = 4, 6  # the batch splits over 1, 2 and 3 ranks
# Exit status of a rank whose close() named missing ranks (the test expects it).
EXIT_RANKS_MISSING = 3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--scenario", choices=["normal", "kill", "no-close"], default="normal")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--on-write-error", choices=["raise", "warn"], default="raise")
    parser.add_argument("--timeout", type=float, default=None)
    # The tracer's host-memory budget for queued tensors. Below the run's capture size the
    # training thread waits on the writer, so a failed write reaches it within a step or two.
    parser.add_argument("--memory-cap-kib", type=int, default=None)
    return parser.parse_args()


def batch(step: int, rank: int, world: int, width: int) -> torch.Tensor:
    """This rank's part of the global batch of `step`, [batch, sequence, width]: batch first,
    as the DistributedDataParallel wrapper declares (`dim=0`); the reference takes all of it."""
    g = torch.Generator().manual_seed(1000 + step)
    rows = torch.randn(BATCH, SEQ, width, generator=g)
    n = BATCH // world
    return rows[rank * n : (rank + 1) * n]


def train(args: argparse.Namespace, rank: int, world: int) -> ttc.Tracer:
    model = nn.Sequential(nn.Linear(args.width, args.width), nn.ReLU(), nn.Linear(args.width, 4))
    ttc.seeded_init(model, seed=0)
    wrapped = DDP(model) if world > 1 else model
    opt = torch.optim.SGD(wrapped.parameters(), lr=0.1, momentum=0.9)
    tracer = ttc.Tracer(
        wrapped, opt, args.out,
        role="candidate" if world > 1 else "reference",
        perturbations=2 if world == 1 else 0,
        on_write_error=args.on_write_error,
        collective_timeout_s=args.timeout,
        **({"memory_cap_bytes": args.memory_cap_kib * 1024} if args.memory_cap_kib else {}),
    )  # fmt: skip
    for _ in tracer.run_variants():
        for step in range(args.steps):
            with tracer.step(step):
                loss = wrapped(batch(step, rank, world, args.width)).pow(2).mean()
                loss.backward()
                opt.step()
                opt.zero_grad()
            if args.scenario == "kill" and rank == world - 1 and step == args.steps - 1:
                # The step's tensors are queued; the writer thread is writing them now.
                os.kill(os.getpid(), signal.SIGKILL)
    print(f"rank {rank}: trained {args.steps} steps", flush=True)
    return tracer


def main() -> int:
    args = parse_args()
    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if world > 1 else 0
    tracer = train(args, rank, world)
    if args.scenario == "no-close":
        gc.collect()
        if world > 1:
            dist.barrier()
            dist.destroy_process_group()
        return 0  # the job ends without tracer.close()
    start = time.monotonic()
    try:
        tracer.close()
    except RanksMissing as exc:
        print(exc, flush=True)
        print(f"rank {rank}: close() gave up after {time.monotonic() - start:.2f} s", flush=True)
        # A peer is dead: skip tearing down the process group, whose gloo threads would
        # wait on it.
        os._exit(EXIT_RANKS_MISSING)
    gc.collect()
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
