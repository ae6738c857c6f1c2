"""`traced_train_step` (the Megatron-LM `pretrain()` integration) on a plain torch model in
one process: each call is one captured iteration, the capture closes itself after the last
captured one and later calls run untouched, and a step that raises leaves the rank file
closed without a manifest. The Megatron-core run is `test_integration_megatron_pretrain.py`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from ttrace.bundle.reader import BundleReader
from ttrace.integrations.megatron import traced_train_step


def train_step(
    forward_step_func: Any, data_iterator: Any, model: list[nn.Module], optimizer: Any, *rest: Any
) -> float:
    """Megatron-LM's argument order; one micro-batch per step."""
    optimizer.zero_grad()
    loss = forward_step_func(next(data_iterator), model[0])
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def setup() -> tuple[list[nn.Module], torch.optim.Optimizer, Any]:
    torch.manual_seed(0)
    model = [nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))]
    batches = iter(
        [torch.randn(3, 4, generator=torch.Generator().manual_seed(i)) for i in range(5)]
    )
    return model, torch.optim.SGD(model[0].parameters(), lr=0.1), batches


def forward(x: torch.Tensor, m: nn.Module) -> torch.Tensor:
    return m(x).square().mean()


def test_each_call_is_an_iteration_and_the_capture_closes_itself(tmp_path: Path) -> None:
    model, optimizer, batches = setup()
    step = traced_train_step(train_step, tmp_path / "b", iterations=[0, 1])
    losses = [step(forward, batches, model, optimizer, None, None, None) for _ in range(4)]
    assert all(loss > 0 for loss in losses)
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["iterations"] == [0, 1], manifest["iterations"]
    with BundleReader(tmp_path / "b") as reader:  # identity: (variant, iteration, ...)
        assert {i[1] for i in reader.identities()} == {0, 1}
    assert step.tracer is not None and step.calls == 2  # calls 3 and 4 ran uncaptured


def test_a_step_that_raises_closes_the_rank_file_without_a_manifest(tmp_path: Path) -> None:
    model, optimizer, batches = setup()
    step = traced_train_step(train_step, tmp_path / "b", iterations=[0, 1])
    step(forward, batches, model, optimizer, None, None, None)

    def failing(x: torch.Tensor, m: nn.Module) -> torch.Tensor:
        raise RuntimeError("step 1 failed")

    with pytest.raises(RuntimeError, match="step 1 failed"):
        step(failing, batches, model, optimizer, None, None, None)
    status = json.loads((tmp_path / "b" / "rank-00000.status.json").read_text())
    assert (status["state"], status["steps_done"]) == ("exited", [["nominal", 0]]), status
    assert not (tmp_path / "b" / "manifest.json").exists()
