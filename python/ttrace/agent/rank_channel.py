"""Bytes between the ranks of the job, over its own default process group (no pickle).

Every serve-loop tick starts with `sync`: an all-reduce (MAX) of [command length, stop
flag], so all ranks learn together whether rank 0 has a command and whether any rank must
stop (SIGTERM on any rank, shutdown or idle timeout on rank 0). A command then follows as a
uint8 broadcast from rank 0; results come back with `gather`. With NCCL the tensors live on
the rank's current CUDA device, as NCCL requires; gloo takes host tensors.
"""

from __future__ import annotations

import torch
import torch.distributed as dist


class RankChannel:
    def __init__(self) -> None:
        self.distributed = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if self.distributed else 0
        self.world_size = dist.get_world_size() if self.distributed else 1
        nccl = self.distributed and dist.get_backend() == "nccl"
        self.device = (
            torch.device("cuda", torch.cuda.current_device()) if nccl else torch.device("cpu")
        )

    def sync(self, length: int, stop: bool) -> tuple[int, bool]:
        """(rank 0's command length, whether any rank wants to stop)."""
        if not self.distributed:
            return length, stop
        t = torch.tensor([length, int(stop)], dtype=torch.int64, device=self.device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        values = t.cpu().tolist()
        return int(values[0]), bool(values[1])

    def broadcast(self, payload: bytes, length: int) -> bytes:
        """Rank 0's `payload` (of `length` bytes, known to every rank from `sync`)."""
        if not self.distributed:
            return payload
        if self.rank == 0:
            buf = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(self.device)
        else:
            buf = torch.empty(length, dtype=torch.uint8, device=self.device)
        dist.broadcast(buf, src=0)
        return bytes(buf.cpu().numpy().tobytes())

    def gather(self, blob: bytes) -> list[bytes] | None:
        """Every rank's blob on rank 0 (None elsewhere); lengths first, then padded bytes."""
        if not self.distributed:
            return [blob]
        size = torch.tensor([len(blob)], dtype=torch.int64, device=self.device)
        sizes = [torch.zeros_like(size) for _ in range(self.world_size)]
        dist.all_gather(sizes, size)
        lengths = [int(s.item()) for s in sizes]
        width = max(lengths)
        mine = torch.zeros(width, dtype=torch.uint8, device=self.device)
        if blob:
            mine[: len(blob)] = torch.frombuffer(bytearray(blob), dtype=torch.uint8).to(self.device)
        parts = (
            [torch.empty(width, dtype=torch.uint8, device=self.device) for _ in lengths]
            if self.rank == 0
            else None
        )
        dist.gather(mine, parts, dst=0)
        if parts is None:
            return None
        return [bytes(p[:n].cpu().numpy().tobytes()) for p, n in zip(parts, lengths, strict=True)]
