"""The agent in one process (no process group), served from a thread: keyword tensor
inputs, stochastic modules and inputs missing from the reference are reported, never
replaced by the candidate's own values."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch import nn

import ttrace.capture as ttc
from ttrace.bundle.reader import BundleReader
from ttrace_testing.agent_client import AgentClient, merge, rel_error


class Scaled(nn.Module):
    """Takes a tensor by keyword, and a non-tensor flag."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(6, 6)

    def forward(self, x: torch.Tensor, *, scale: torch.Tensor, shift: bool = False) -> torch.Tensor:
        y = self.linear(x) * scale
        return y + 1 if shift else y


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 6)
        self.scaled = Scaled()
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(6, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        h = self.scaled(h, scale=torch.full((6,), 0.5), shift=True)
        return self.out(self.drop(h))


def capture(out: Path, role: str, micro_batches: list[int]) -> ttc.Tracer:
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    tracer = ttc.Tracer(
        model, opt, out, role=role, iterations=[0, 1], micro_batches=micro_batches, world_size=1
    )
    data = torch.Generator().manual_seed(1)
    for it in range(2):
        opt.zero_grad()
        with tracer.step(it):
            for _ in range(2):
                model(torch.randn(3, 4, generator=data)).square().sum().backward()
            opt.step()
    tracer.close()
    return tracer


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AgentClient, Path]]:
    tmp = tmp_path_factory.mktemp("agent1")
    capture(tmp / "ref", "reference", [0])  # micro-batch 1 is missing from the reference
    tracer = capture(tmp / "cand", "candidate", [0, 1])
    options = {"token_file": tmp / "token", "endpoint_file": tmp / "endpoint", "idle_timeout": 120}
    thread = threading.Thread(target=tracer.serve, args=(tmp / "ref",), kwargs=options)
    thread.start()
    try:
        while not (tmp / "endpoint").exists() and thread.is_alive():
            thread.join(0.05)
        client = AgentClient(
            (tmp / "endpoint").read_text().strip(), (tmp / "token").read_text().strip()
        )
        yield client, tmp / "ref"
        assert client.call("shutdown")[0]["status"] == "ok"
        client.close()
    finally:
        thread.join(30)
    assert not thread.is_alive()


def test_hello_reports_why_modules_are_not_replayable(agent) -> None:
    client, _ = agent
    modules = {m["name"]: m for m in client.call("hello")[0]["modules"]}
    assert modules["inp"]["replayable"] and modules["out"]["replayable"]
    assert not modules["drop"]["replayable"]
    assert modules["drop"]["why"] == "stochastic: draws random numbers"


def test_stochastic_module_is_refused(agent) -> None:
    client, _ = agent
    header, _ = client.call("replay", module="drop", iteration=0, micro_batch=0, phase="forward")
    assert header["error"]["code"] == "not_replayable"
    assert header["error"]["message"].endswith("stochastic: draws random numbers")


def test_missing_reference_input_is_refused(agent) -> None:
    client, _ = agent
    header, _ = client.call("replay", module="out", iteration=0, micro_batch=1, phase="forward")
    assert header["error"]["code"] == "not_replayable"
    assert "/nominal/iter_0/mb_1/out/forward_input/0" in header["error"]["message"]


def test_keyword_tensor_input_uses_its_keyword_slot(agent) -> None:
    """Slot "scale" reads forward_input/scale: replayed when the reference has it, refused
    (naming it) when capture did not record keyword tensors."""
    client, ref_dir = agent
    ref = BundleReader(ref_dir)
    header, payloads = client.call(
        "replay", module="scaled", iteration=0, micro_batch=0, phase="backward"
    )
    key = ("nominal", 0, 0, "scaled", "forward_input", "scale")
    if key in ref.index():
        assert header["status"] == "ok", header
        for k, v in merge(header["tensors"], payloads).items():
            assert rel_error(v, ref.merged((k[0], k[4], k[5], k[1], k[2], k[3]))) < 1e-6, k
    else:
        assert header["error"]["code"] == "not_replayable"
        assert "forward_input/scale" in header["error"]["message"]


def test_plain_module_replays_exactly(agent) -> None:
    client, ref_dir = agent
    ref = BundleReader(ref_dir)
    header, payloads = client.call(
        "replay", module="inp", iteration=0, micro_batch=0, phase="backward"
    )
    assert header["status"] == "ok", header
    merged = merge(header["tensors"], payloads)
    assert {k[2] for k in merged} == {"forward_output", "param_grad"}  # x needs no grad
    for k, v in merged.items():
        assert rel_error(v, ref.merged((k[0], k[4], k[5], k[1], k[2], k[3]))) == 0.0, k


@pytest.mark.parametrize("iteration", [0, 1])
def test_optimizer_step_with_torch_optim_state(agent, iteration: int) -> None:
    """Iteration 0 starts from the optimizer's state before its first step; iteration 1 from
    the reference's momentum buffers left by iteration 0."""
    client, ref_dir = agent
    ref = BundleReader(ref_dir)
    header, payloads = client.call("replay", module="", iteration=iteration, phase="step")
    assert header["status"] == "ok", header
    merged = merge(header["tensors"], payloads)
    assert {k[2] for k in merged} == {"param_after_step", "optimizer_state"}
    assert ("nominal", "inp", "optimizer_state", "momentum_buffer.weight", iteration, -1) in merged
    for k, v in merged.items():
        assert rel_error(v, ref.merged((k[0], k[4], k[5], k[1], k[2], k[3]))) == 0.0, k
