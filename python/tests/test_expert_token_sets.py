"""An expert's rows under expert data parallelism, exchanged through the job's own key-value
store (`ttrace.capture.expert_token_sets`), on 2 real gloo ranks: each rank's rows are its
block of the expert's global tokens, and every call's keys are gone from the store once both
ranks have read them (a long capture must not grow the store the job keeps using)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from ttrace.capture.capture_state import CaptureState
from ttrace.capture.expert_token_sets import ExpertTokenSets
from ttrace.capture.naming import ModuleNames
from ttrace.capture.parallel_info import ParallelInfo
from ttrace_testing.ports import free_port

ROWS = (3, 5)  # tokens routed to the expert on data-parallel ranks 0 and 1
CALLS = 6  # calls of the expert: iterations x micro-batches of a capture


def _rank(rank: int, port: int, out: Path) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        expert = nn.Linear(4, 4)
        names = ModuleNames(names={expert: "moe.experts.0"}, expert_root={expert: expert})
        state = CaptureState(in_step=True)
        rows: dict[nn.Module, object] = {}
        info = ParallelInfo(dp=2, dp_rank=rank)
        sets = ExpertTokenSets(names, info, state, "test", 30.0, rows)
        assert sets.applies()
        sets.install()
        store = dist.distributed_c10d._get_default_store()
        dist.barrier()  # whatever the process group keeps in the store is in
        # Counted before the next barrier: past it, the other rank's first count may be in.
        before = store.num_keys()
        dist.barrier()
        seen = []
        for call in range(CALLS):
            state.iteration = call // 2
            expert(torch.zeros(ROWS[rank] + call, 4))
            decision = rows[expert]
            seen.append((decision.rows.size, decision.rows.indices[0], len(decision.rows.indices)))
        dist.barrier()  # both ranks have read every call's counts
        record = {"seen": seen, "keys_before": before, "keys_after": store.num_keys()}
        (out / f"rank{rank}.json").write_text(json.dumps(record))
        sets.remove()
    finally:
        dist.destroy_process_group()


def test_rows_are_each_ranks_block_and_the_store_is_left_as_found(tmp_path: Path) -> None:
    mp.start_processes(_rank, args=(free_port(), tmp_path), nprocs=2, start_method="spawn")
    for rank in range(2):
        record = json.loads((tmp_path / f"rank{rank}.json").read_text())
        for call, (size, first, count) in enumerate(record["seen"]):
            local = [r + call for r in ROWS]
            assert size == sum(local), (rank, call)
            assert first == sum(local[:rank]) and count == local[rank], (rank, call)
        left = record["keys_after"] - record["keys_before"]
        assert left == 0, f"rank {rank}: {left} keys left in the store"
