"""Replays of a DDP candidate (2 gloo ranks, gradients averaged): each returned tensor takes
the placement and the scale capture gave it, so that replayed activation gradients, partial
parameter gradients and the per-rank loss add up to the reference's as captured ones do.

The candidate's per-rank loss is the mean over its half of the batch, so its activation
gradients are twice the reference's share; capture scales them (grad_reduce "mean") and the
replay must scale alike, while feeding the module the gradient it saw in training."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import ttrace.capture as ttc
from ttrace.bundle.reader import BundleReader
from ttrace_testing.agent_client import AgentClient, merge, rel_error
from ttrace_testing.ports import free_port

BATCH = 4  # global; each of the 2 candidate ranks takes half


class MeanSquare(nn.Module):
    def forward(self, y: torch.Tensor) -> torch.Tensor:
        return y.square().mean()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(4, 6)
        self.act = nn.Tanh()
        self.out = nn.Linear(6, 3)
        self.loss = MeanSquare()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.loss(self.out(self.act(self.inp(x))))


def _batch() -> torch.Tensor:
    return torch.randn(BATCH, 4, generator=torch.Generator().manual_seed(3))


def _train(model: nn.Module, tracer: ttc.Tracer, x: torch.Tensor) -> None:
    opt = tracer.optimizer
    with tracer.step(0):
        opt.zero_grad()
        model(x).backward()
        opt.step()
    tracer.close()


def _reference(out: Path) -> None:
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tracer = ttc.Tracer(model, opt, out, role="reference", iterations=[0], world_size=1)
    _train(model, tracer, _batch())


def _candidate_rank(rank: int, port: int, tmp: Path) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        torch.manual_seed(0)
        model = DistributedDataParallel(Net())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        # Activations are [batch, features]: batch-first said, the averaging read from DDP.
        info = ttc.ParallelInfo(dp=2, dp_rank=rank, batch_dim=0)
        tracer = ttc.Tracer(model, opt, tmp / "cand", iterations=[0], parallel=info)
        assert tracer.parallel.grad_reduce == "mean" and tracer.parallel.dp == 2
        half = BATCH // 2
        _train(model, tracer, _batch()[rank * half : (rank + 1) * half])
        tracer.serve(
            tmp / "ref",
            token_file=tmp / "token",
            endpoint_file=tmp / "endpoint",
            idle_timeout=120,
        )
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AgentClient, Path]]:
    tmp = tmp_path_factory.mktemp("agent_mean")
    _reference(tmp / "ref")
    ctx = mp.start_processes(
        _candidate_rank, args=(free_port(), tmp), nprocs=2, join=False, start_method="spawn"
    )
    client: AgentClient | None = None
    try:
        while not (tmp / "endpoint").exists():
            assert not ctx.join(0.1), "the candidate ended before serving"
        client = AgentClient(
            (tmp / "endpoint").read_text().strip(), (tmp / "token").read_text().strip()
        )
        yield client, tmp / "ref"
        assert client.call("shutdown")[0]["status"] == "ok"
        while not ctx.join(30):
            pass
    finally:
        if client is not None:
            client.close()
        for p in ctx.processes:
            if p.is_alive():
                p.kill()


def _errors(client: AgentClient, ref_dir: Path, module: str) -> dict[tuple, float]:
    ref = BundleReader(ref_dir)
    header, payloads = client.call(
        "replay", module=module, iteration=0, micro_batch=0, phase="backward"
    )
    assert header["status"] == "ok", header
    merged = merge(header["tensors"], payloads)
    return {
        k: rel_error(v, ref.merged((k[0], k[4], k[5], k[1], k[2], k[3]))) for k, v in merged.items()
    }


def test_linear_replay_scales_gradients_as_capture(agent) -> None:
    client, ref = agent
    errors = _errors(client, ref, "out")
    assert {k[2] for k in errors} == {"forward_output", "input_grad", "param_grad"}
    for key, err in errors.items():
        assert err < 1e-6, (key, err)


def test_per_rank_loss_replays_as_a_scaled_partial_sum(agent) -> None:
    client, ref = agent
    errors = _errors(client, ref, "loss")
    assert {k[2] for k in errors} == {"forward_output", "input_grad"}
    for key, err in errors.items():
        assert err < 1e-6, (key, err)


def test_captured_loss_gradient_is_the_reference_one(agent) -> None:
    """The per-rank loss is stored as a scaled partial sum; its gradient, 1 on each rank,
    is the reference loss's gradient with respect to that partial, and stored unscaled."""
    _, ref_dir = agent
    key = ("nominal", 0, 0, "loss", "output_grad", "0")
    cand = BundleReader(ref_dir.parent / "cand").merged(key)
    assert rel_error(cand, BundleReader(ref_dir).merged(key)) == 0.0


def test_step_replay_places_as_capture(agent) -> None:
    client, ref_dir = agent
    ref = BundleReader(ref_dir)
    header, payloads = client.call("replay", module="", iteration=0, phase="step")
    assert header["status"] == "ok", header
    merged = merge(header["tensors"], payloads)
    assert {k[2] for k in merged} == {"param_after_step"}
    for k, v in merged.items():
        assert rel_error(v, ref.merged((k[0], k[4], k[5], k[1], k[2], k[3]))) < 1e-6, k
