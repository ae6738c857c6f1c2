"""Forward/backward over the micro-batches of one iteration: a plain loop without pipeline
parallelism, and Megatron's non-interleaved 1F1B schedule over point-to-point send/recv."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist

from .parallel_state import ParallelState

# forward_step(micro_batch, stage_input) -> stage output (a scalar loss on the last stage)
ForwardStep = Callable[[int, torch.Tensor | None], torch.Tensor]


def scale_loss(loss: torch.Tensor, micro_batches: int, bugs: set[str]) -> torch.Tensor:
    """Megatron's schedules divide each micro-batch's loss by the number of micro-batches, so
    that the accumulated gradient is the mean over micro-batches."""
    if "grad-accum-scale" in bugs:
        # Bug zoo: the division is dropped (it moved into a loss function that does not do it).
        return loss
    return loss / micro_batches


def forward_backward_no_pipelining(
    forward_step: ForwardStep, micro_batches: int, bugs: set[str] | None = None
) -> None:
    for i in range(micro_batches):
        scale_loss(forward_step(i, None), micro_batches, bugs or set()).backward()


class _P2P:
    def __init__(self, ps: ParallelState, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        self.ps, self.shape, self.dtype = ps, shape, dtype
        r = ps.pp_rank
        self.prev = ps.pp_ranks[r - 1] if r > 0 else None
        self.next = ps.pp_ranks[r + 1] if r + 1 < ps.cfg.pp else None

    def exchange(
        self, send: torch.Tensor | None, send_to: int | None, recv_from: int | None
    ) -> torch.Tensor | None:
        """Post the send and the receive together, then wait for both: neither side can
        block the other whatever order the peers reach this point in."""
        reqs = []
        buf = None
        if send is not None and send_to is not None:
            reqs.append(dist.isend(send.detach().contiguous(), send_to))
        if recv_from is not None:
            buf = torch.empty(self.shape, dtype=self.dtype)
            reqs.append(dist.irecv(buf, recv_from))
        for r in reqs:
            r.wait()
        return buf


def forward_backward_1f1b(
    forward_step: ForwardStep,
    micro_batches: int,
    ps: ParallelState,
    shape: tuple[int, ...],
    dtype: torch.dtype,
) -> None:
    p2p = _P2P(ps, shape, dtype)
    last_stage = ps.is_last_stage
    inputs: list[torch.Tensor | None] = []
    outputs: list[torch.Tensor] = []

    def recv_forward() -> torch.Tensor | None:
        x = p2p.exchange(None, None, p2p.prev)
        return x.requires_grad_() if x is not None else None

    def forward(i: int, x: torch.Tensor | None) -> torch.Tensor:
        y = forward_step(i, x)
        if last_stage:
            y = scale_loss(y, micro_batches, ps.cfg.bugs)
        inputs.append(x)
        outputs.append(y)
        return y

    def backward(grad_y: torch.Tensor | None) -> torch.Tensor | None:
        x, y = inputs.pop(0), outputs.pop(0)
        if p2p.next is None:
            y.backward()
        else:
            y.backward(grad_y)
        return x.grad if x is not None else None

    warmup = min(ps.cfg.pp - ps.pp_rank - 1, micro_batches)
    remaining = micro_batches - warmup
    for i in range(warmup):
        y = forward(i, recv_forward())
        p2p.exchange(y, p2p.next, None)
    x = recv_forward() if remaining > 0 else None
    for j in range(remaining):
        y = forward(warmup + j, x)
        grad_y = p2p.exchange(y if p2p.next is not None else None, p2p.next, p2p.next)
        grad_x = backward(grad_y)
        last = j == remaining - 1
        x = p2p.exchange(grad_x, p2p.prev, None if last else p2p.prev)
        if x is not None:
            x.requires_grad_()
    for _ in range(warmup):
        grad_y = p2p.exchange(None, None, p2p.next)
        p2p.exchange(backward(grad_y), p2p.prev, None)
