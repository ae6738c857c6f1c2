"""`BackwardOrder`: a pipelining stage's parameter gradients filed by micro-batch when the
schedule runs the stage's backward passes in another order than its forwards (torch's
`ScheduleLoopedBFS` runs them in reverse). Real autograd on a real module: the entries filed
for a reversed (and a shuffled) order must be the gradients an in-order run accumulates."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from ttrace.capture.backward_order import BackwardOrder
from ttrace.capture.capture_state import CaptureState

MICRO_BATCHES = 3


def inputs() -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return [torch.randn(4, 8, generator=g) for _ in range(MICRO_BATCHES)]


def run(order: list[int]) -> dict[int, torch.Tensor]:
    """Forward every micro-batch in turn, backward in `order`; what is filed per micro-batch
    for the weight."""
    torch.manual_seed(0)
    layer = nn.Linear(8, 8)
    state = CaptureState(in_step=True)
    tracker = BackwardOrder(state, {0}, lambda chunk: [(p, p) for p in layer.parameters()])
    tracker.install([layer])
    filed: dict[int, torch.Tensor] = {}
    count = 0

    def on_grad(p: torch.Tensor) -> None:
        nonlocal count
        assert p.grad is not None
        for mb, grad in tracker.accumulated(p, 0, count, p.grad):
            assert mb not in filed, f"micro-batch {mb} filed twice"
            filed[mb] = grad.detach().clone()
        count += 1

    layer.weight.register_post_accumulate_grad_hook(on_grad)
    losses = []
    for mb, x in enumerate(inputs()):
        state.forward_mb = mb
        losses.append(layer(x).pow(2).sum())
    for mb in order:
        losses[mb].backward()
    tracker.remove()
    return filed


@pytest.mark.parametrize("order", [[2, 1, 0], [1, 0, 2], [0, 2, 1]])
def test_out_of_order_backward_files_the_in_order_sums(order: list[int]) -> None:
    expected = run(list(range(MICRO_BATCHES)))
    got = run(order)
    assert sorted(got) == sorted(expected) == list(range(MICRO_BATCHES))
    for mb in range(MICRO_BATCHES):
        # The sums of another order round differently: a few ulps, never another gradient.
        torch.testing.assert_close(got[mb], expected[mb], rtol=1e-6, atol=1e-6)


def test_in_order_backward_files_each_gradient_as_it_comes() -> None:
    filed = run(list(range(MICRO_BATCHES)))
    # In order nothing is kept back: the last entry is `.grad` after all micro-batches.
    assert list(filed) == list(range(MICRO_BATCHES))
