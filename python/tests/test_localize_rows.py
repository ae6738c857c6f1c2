"""`ttrace localize` on the rows capture files besides a module's first call, on real
framework code with no annotation, each candidate kept up after capture as its agent
(`TTRACE_SERVE=1`) and driven by the real CLI:

- a pipeline hand-off (Megatron-core 0.16.1, PP2, 1F1B, and interleaved with two chunks per
  stage): stage 1 consumes a stale activation; the hand-off `decoder.layers.1@handoff` is
  replayed (what the candidate's hand-off did, applied to the reference's value) and named,
  the next stage's layers fed the reference's input are inherited, from the live job and
  from its bundles relaunched by `ttrace serve`;
- a module called twice (a shared block under DDP) with a bug on its second call's path
  only: `shared@call1` is named, its first call agrees;
- activation recompute (`torch.utils.checkpoint`) that does not restore the random state:
  the deterministic recomputed modules are replayed (inherited), the ones that draw random
  numbers are refused with their typed reason, worded as every front end words it;
- mixture of experts (Megatron-core, EP2 and EP2 x expert-DP2, all-to-all dispatcher): one
  expert's own code is wrong on one rank; the expert is replayed with its tokens in the
  dispatcher's order and named by its global id, the other experts agree.

Slow (Megatron references and candidates): the CTest entry `python_localize_rows`.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from job_runner import run_module
from serve_job import RelaunchJob
from serving_candidate import TIMES, ServingCandidate, localize


def reference_of(out: Path, module: str, args: list[str], timeout: int = 900) -> Path:
    started = time.monotonic()
    run_module(module, ["--out", str(out), *args], 1, timeout)
    TIMES[f"reference {out.name}"] = time.monotonic() - started
    return out


def verdicts(report: dict) -> dict[tuple[str, str, int], dict]:
    return {(v["module"], v["phase"], v["micro_batch"]): v for v in report["verdicts"]}


def test_stale_pipeline_activation_is_introduced_at_the_hand_off(
    tmp_path: Path, serving: list[ServingCandidate]
) -> None:
    layers = ["--layers", "4"]
    reference = reference_of(tmp_path / "pp-reference", "tests.megatron.gpt_train", layers)
    args = [*layers, "--pp", "2", "--bug", "stale_activation"]
    job = ServingCandidate(tmp_path / "pp2", reference, "tests.megatron.gpt_train", args, 2)
    serving.append(job)
    rc, report, text = job.localize(reference, tmp_path / "pp2-walk.json")
    print(f"\npp2 stale activation: exit {rc}, {TIMES['pp2-walk']:.1f} s\n{text}")
    assert rc == 1 and report["guilty"] == ["decoder.layers.1@handoff"], text
    found = verdicts(report)
    handoff = found[("decoder.layers.1@handoff", "forward", 1)]
    assert handoff["verdict"] == "introduced" and handoff["ratio"] > 1e3, text
    # The next stage's first layer, fed the reference's input, only passes it on.
    assert found[("decoder.layers.2", "forward", 1)]["verdict"] == "inherited", text
    # The first micro-batch's hand-off was right both ways: replayed, it changes nothing.
    rc, report, text = job.localize(
        reference,
        tmp_path / "pp2-handoff-mb0.json",
        *("--module", "decoder.layers.1@handoff", "--micro-batch", "0"),
    )
    assert rc == 0 and report["verdicts"][0]["ratio"] == 0.0, text
    rc, report, text = job.localize(
        reference,
        tmp_path / "pp2-handoff-backward.json",
        *("--module", "decoder.layers.1@handoff", "--phase", "backward", "--shutdown"),
    )
    assert rc == 0 and report["verdicts"][0]["verdict"] == "inherited", text
    assert job.proc.wait(timeout=120) == 0, job.output()
    # Relaunched from the bundles alone (`ttrace serve`), the hand-off replays the same.
    relaunch = RelaunchJob(tmp_path / "serve", reference, job.bundle, cwd=tmp_path)
    try:
        endpoint, _, _ = relaunch.wait_serving()
        out = tmp_path / "pp2-relaunch.json"
        rc, report, text = localize(
            reference, job.bundle, endpoint, relaunch.token_file, out, "--shutdown"
        )
        assert rc == 1 and report["guilty"] == ["decoder.layers.1@handoff"], text
        assert relaunch.proc.wait(timeout=120) == 0, relaunch.output()
    finally:
        relaunch.kill()


def test_stale_activation_under_interleaved_chunks_is_introduced_at_each_hand_off(
    tmp_path: Path, serving: list[ServingCandidate]
) -> None:
    """PP2 with two model chunks per stage (VPP): layers 0 and 2 on stage 0, 1 and 3 on
    stage 1, so three hand-offs per micro-batch cross the stages. Every receive after the
    first of a step is stale: the hand-offs into stage 1 (`layers.0@handoff` in micro-batch
    1, `layers.2@handoff` from micro-batch 0 on) are named; the layers after them, fed the
    reference's input, and the hand-off back to stage 0 pass it on."""
    layers = ["--layers", "4"]
    reference = reference_of(tmp_path / "vpp-reference", "tests.megatron.gpt_train", layers)
    args = [*layers, "--pp", "2", "--vpp", "2", "--bug", "stale_activation"]
    job = ServingCandidate(tmp_path / "vpp", reference, "tests.megatron.gpt_train", args, 2)
    serving.append(job)
    rc, report, text = job.localize(reference, tmp_path / "vpp-walk.json", "--shutdown")
    print(f"\nvpp stale activation: exit {rc}, {TIMES['vpp-walk']:.1f} s\n{text}")
    assert rc == 1, text
    assert set(report["guilty"]) == {"decoder.layers.0@handoff", "decoder.layers.2@handoff"}, text
    found = verdicts(report)
    assert found[("decoder.layers.2@handoff", "forward", 0)]["verdict"] == "introduced", text
    assert found[("decoder.layers.0@handoff", "forward", 1)]["verdict"] == "introduced", text
    for row in [("decoder.layers.3", "forward", 0), ("decoder.layers.1", "forward", 1)]:
        assert found[row]["verdict"] == "inherited", text
    assert found[("decoder.layers.1@handoff", "forward", 1)]["verdict"] == "inherited", text


CALLS = "tests.frameworks.repeated_calls"


def test_second_call_is_replayed_as_its_own_call(
    tmp_path: Path, serving: list[ServingCandidate]
) -> None:
    deterministic = ["--recompute", "none", "--keep", "1.0"]
    reference = reference_of(tmp_path / "calls-reference", CALLS, deterministic)
    args = [*deterministic, "--bug", "second-call"]
    job = ServingCandidate(tmp_path / "calls", reference, CALLS, args, 2)
    serving.append(job)
    rc, report, text = job.localize(reference, tmp_path / "calls-walk.json")
    print(f"\nsecond call: exit {rc}, {TIMES['calls-walk']:.1f} s\n{text}")
    assert rc == 1 and report["guilty"] == ["shared@call1"], text
    # Each call with its own inputs: the first is right, the second holds the bug, forward
    # and backward.
    rc, report, text = job.localize(
        reference,
        tmp_path / "calls-each.json",
        *("--module", "shared", "--module", "shared@call1", "--phase", "backward"),
        "--shutdown",
    )
    found = verdicts(report)
    assert found[("shared", "backward", 0)]["verdict"] == "inherited", text
    assert found[("shared@call1", "backward", 0)]["verdict"] == "introduced", text
    assert rc == 1 and report["guilty"] == ["shared@call1"], text
    live = {(k, v["verdict"]) for k, v in found.items()}
    assert job.proc.wait(timeout=120) == 0, job.output()
    # Relaunched from the bundles alone (`ttrace serve`), each call replays with its own
    # recorded arguments: the same verdicts as the live job.
    relaunch = RelaunchJob(tmp_path / "calls-serve", reference, job.bundle, cwd=tmp_path)
    try:
        endpoint, _, _ = relaunch.wait_serving()
        out = tmp_path / "calls-relaunch.json"
        rc, report, text = localize(
            reference, job.bundle, endpoint, relaunch.token_file, out,
            *("--module", "shared", "--module", "shared@call1", "--phase", "backward"),
            "--shutdown",
        )  # fmt: skip
        assert rc == 1 and report["guilty"] == ["shared@call1"], text
        assert {(k, v["verdict"]) for k, v in verdicts(report).items()} == live, text
        assert relaunch.proc.wait(timeout=120) == 0, relaunch.output()
    finally:
        relaunch.kill()


def test_recompute_replayed_or_refused_with_its_reason(
    tmp_path: Path, serving: list[ServingCandidate]
) -> None:
    reference = reference_of(tmp_path / "recompute-reference", CALLS, ["--recompute", "none"])
    args = ["--recompute", "nonreentrant", "--bug", "rng"]
    job = ServingCandidate(tmp_path / "recompute", reference, CALLS, args, 2)
    serving.append(job)
    words = "a recompute of a module that draws random numbers"
    # The walk reaches the recompute that drew another mask and cannot judge it: no answer
    # (exit 2), never "nothing introduced", with the reason.
    rc, report, text = job.localize(reference, tmp_path / "recompute-walk.json")
    print(f"\nrecompute without the random state: exit {rc}\n{text}")
    assert rc == 2 and "UNDETERMINED" in text and words in text, text
    rows = ("layers.1.mask@recompute", "layers.1.fc2@recompute", "layers.1@recompute")
    named = [a for row in rows for a in ("--module", row)]
    rc, report, text = job.localize(reference, tmp_path / "recompute.json", *named, "--shutdown")
    found = verdicts(report)
    # A deterministic recomputed module, fed the reference's inputs of the call it recomputes,
    # reproduces the reference's forward.
    assert found[("layers.1.fc2@recompute", "forward", 0)]["verdict"] == "inherited", text
    # One that draws random numbers cannot be judged by a replay, and says why in the words
    # the explorer shows too.
    for row in ("layers.1.mask@recompute", "layers.1@recompute"):
        refused = found[(row, "forward", 0)]
        assert refused["verdict"] == "not replayable", text
        assert refused["reason"].startswith(f"not_replayable: {words}"), refused
    assert "could not be replayed" in text, text


MOE_EXPERT = "decoder.layers.0.mlp.experts.local_experts"


@pytest.fixture(scope="module")
def moe_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("moe") / "moe-reference"
    return reference_of(out, "tests.megatron.gpt_train", ["--moe"])


def test_expert_bug_is_named_by_its_global_id(
    tmp_path: Path, moe_reference: Path, serving: list[ServingCandidate]
) -> None:
    args = ["--moe", "--ep", "2", "--bug", "expert_scale"]
    job = ServingCandidate(tmp_path / "moe", moe_reference, "tests.megatron.gpt_train", args, 2)
    serving.append(job)
    rc, report, text = job.localize(moe_reference, tmp_path / "moe-walk.json")
    print(f"\nMoE EP2 expert bug: exit {rc}, {TIMES['moe-walk']:.1f} s\n{text}")
    # Local expert 0 of EP rank 1 is global expert 2.
    assert rc == 1 and report["guilty"] == [f"{MOE_EXPERT}.2.linear_fc2"], text
    # Every other expert, on either EP rank, agrees given the reference's tokens.
    others = [a for e in (0, 1, 3) for a in ("--module", f"{MOE_EXPERT}.{e}")]
    rc, report, text = job.localize(moe_reference, tmp_path / "moe-experts.json", *others)
    assert rc == 0, text
    assert {v["verdict"] for v in report["verdicts"]} == {"inherited"}, text
    rc, report, text = job.localize(
        moe_reference,
        tmp_path / "moe-expert-backward.json",
        *("--module", f"{MOE_EXPERT}.2", "--phase", "backward", "--shutdown"),
    )
    assert rc == 1 and report["verdicts"][0]["verdict"] == "introduced", text


def test_expert_bug_under_expert_data_parallelism(
    tmp_path: Path, moe_reference: Path, serving: list[ServingCandidate]
) -> None:
    """EP2 x expert-DP2: each expert's rows are split over its two copies; the container's
    token counts are partial sums over them and cannot be fed, which is said with its
    reason, and the walk goes on to name the expert."""
    args = ["--moe", "--ep", "2", "--bug", "expert_scale"]
    job = ServingCandidate(tmp_path / "edp", moe_reference, "tests.megatron.gpt_train", args, 4)
    serving.append(job)
    rc, report, text = job.localize(moe_reference, tmp_path / "edp-walk.json", "--shutdown")
    print(f"\nMoE EP2 x expert-DP2 expert bug: exit {rc}, {TIMES['edp-walk']:.1f} s\n{text}")
    assert rc == 1 and report["guilty"] == [f"{MOE_EXPERT}.2.linear_fc2"], text
    container = verdicts(report)[("decoder.layers.0.mlp.experts", "forward", 0)]
    assert container["verdict"] == "not replayable", text
    assert "held as partial sums across ranks" in container["reason"], container
