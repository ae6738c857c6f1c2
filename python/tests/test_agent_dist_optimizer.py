"""Optimizer-step replay through a distributed (ZeRO-1) optimizer, on real 2-rank torchrun
gloo jobs of the example GPT (DP2, --dist-optimizer) serving replays.

The optimizer reads its gradients from a flat buffer of which each `main_grad` is a view, and
capture records only each rank's owned slice: the agent writes the reference's gradients
through the views. A correct candidate's step then agrees with the reference (twice: the
first replay must leave the buffer and its views as the job had them), and the zoo's
dist-opt-wrong-offset (updated values copied out of the gathered buffer at the wrong offsets)
misses it. Slow (two candidates): part of the `python_agent` CTest entry."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ttrace.bundle.reader import BundleReader
from ttrace_testing.agent_client import AgentClient, merge, rel_error
from ttrace_testing.agent_job import REPO, ServingJob, env, train_command

CANDIDATE = ("--dp", "2", "--dist-optimizer")
FP32_TOL = 1e-5  # the example's end-to-end fp32 bar (test_example_gpt.py)
BUG_MIN = 1e-2


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "bundle"
    cmd = train_command(out, 1, "--reference", "--perturbations", "1")
    subprocess.run(cmd, cwd=REPO, env=env(), check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory, reference: Path) -> Iterator[dict]:
    bug = ("--inject", "dist-opt-wrong-offset")
    jobs = {
        "correct": ServingJob(tmp_path_factory.mktemp("correct"), reference, 2, *CANDIDATE),
        "buggy": ServingJob(tmp_path_factory.mktemp("buggy"), reference, 2, *CANDIDATE, *bug),
    }
    out: dict[str, AgentClient] = {}
    try:
        for name, job in jobs.items():
            out[name] = AgentClient(*job.wait_serving())
        yield out
    finally:
        for client in out.values():
            client.close()
        for job in jobs.values():
            job.kill()


def step_errors(client: AgentClient, ref: BundleReader) -> tuple[dict[tuple, float], dict]:
    header, payloads = client.call("replay", module="", iteration=0, micro_batch=0, phase="step")
    assert header["status"] == "ok", header
    merged = merge(header["tensors"], payloads)
    errors = {
        k: rel_error(v, ref.merged((k[0], k[4], k[5], k[1], k[2], k[3]))) for k, v in merged.items()
    }
    return errors, merged


def test_step_replay_feeds_the_flat_gradient_buffer(clients: dict, reference: Path) -> None:
    ref = BundleReader(reference)
    first, values = step_errors(clients["correct"], ref)
    assert {k[2] for k in first} == {"param_after_step"}
    assert len(first) == 15  # every parameter of the 2-layer model
    assert max(first.values()) < FP32_TOL, first
    _, repeated = step_errors(clients["correct"], ref)
    assert all(np.array_equal(values[k], repeated[k]) for k in values), "the job was changed"
    wrong, _ = step_errors(clients["buggy"], ref)
    assert max(wrong.values()) > BUG_MIN, wrong
