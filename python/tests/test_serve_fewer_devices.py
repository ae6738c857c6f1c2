"""`ttrace serve` on fewer devices than the job: a TP2xDP2 candidate relaunched as TP2.

The example GPT's TP2xDP2 candidate with a tensor-parallel forward bug (the vocab-parallel
cross entropy missing an all-reduce) captures while serving live; its bundles are copied
away, and the real `ttrace serve` relaunches the script with the user's LAUNCH and the
script's own layout options (`--tp 2 --dp 1`, two processes). `ttrace localize` then names
the same guilty module with the same verdicts and ratios as the live four-rank job; a
gradient-reduction replay is refused with `layout_too_small` (exit 2); a TP1 relaunch,
which cannot host a TP2-split module, refuses to start with the reason; `--print-plan` shows
the relaunch's two ranks beside the job's four. A real FSDP2 job relaunched on one device
refuses every module whose parameters FSDP2 splits over data parallel.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_paths import ttrace_binary
from job_runner import PYTHON_DIR, run_module
from serve_job import RelaunchJob
from test_serve_relaunch import localize, verdicts

from ttrace.agent.relaunch_layout import LayoutError, relaunch_layout
from ttrace_testing.agent_client import AgentClient
from ttrace_testing.agent_job import REPO, ServingJob, env, train_command

BUG = "vocab-ce-missing-allreduce"
TIMES: dict[str, list[float]] = {"ready_s": [], "small_s": [], "full_s": []}


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "bundle"
    cmd = train_command(out, 1, "--reference", "--perturbations", "1")
    subprocess.run(cmd, cwd=REPO, env=env(), check=True, capture_output=True, timeout=300)
    return out


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, reference: Path) -> tuple[Path, dict]:
    """(copied candidate bundle, the live job's localize report)."""
    work = tmp_path_factory.mktemp("live")
    job = ServingJob(work / "job", reference, 4, "--tp", "2", "--dp", "2", "--inject", BUG)
    try:
        endpoint, _ = job.wait_serving()
        rc, report, text = localize(
            reference, job.bundle, endpoint, job.token_file, work / "live.json", "--shutdown"
        )
        assert rc == 1, text
        assert job.wait(timeout=120) == 0, job.output()
    finally:
        job.kill()
    copied = work / "copied"
    shutil.copytree(job.bundle, copied)
    shutil.rmtree(job.bundle)  # the job and its own bundle are gone: only the copy remains
    TIMES["full_s"] += [v["agent_seconds"] for v in report["verdicts"]]
    return copied, report


def _manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())


def _launch(candidate: Path, nproc: int, *layout: str) -> list[str]:
    """The user's LAUNCH: the launcher, the script and its own options with a smaller layout."""
    return train_command(candidate, nproc, *layout, "--inject", BUG)


# --- which captured ranks a relaunched rank serves ---------------------------------------------


def test_each_tp2_rank_serves_its_captured_data_parallel_ranks(live: tuple[Path, dict]) -> None:
    manifest = _manifest(live[0])
    sizes = {"tp": 2, "pp": 1, "dp": 1, "cp": 1, "ep": 1, "vpp": 1}
    for rank, served in ((0, (0, 2)), (1, (1, 3))):
        coords = {"tp": rank, "pp": 0, "dp": 0, "cp": 0, "ep": 0, "vpp": 0}
        layout = relaunch_layout(manifest, rank, 2, sizes, coords)
        assert layout.served == served and layout.served_dp == (0, 1)
        assert layout.reduced
        assert layout.hello()["relaunched"] == {"world_size": 2, "parallel": sizes}
        assert "needs 2 data-parallel ranks; this agent has 1" in (layout.dp_shortfall() or "")
    full = relaunch_layout(manifest, 3, 4, manifest["parallel"], manifest["ranks"][3]["coords"])
    assert full.served == (3,) and not full.reduced and full.dp_shortfall() is None


def test_layouts_that_cannot_host_the_job_are_refused(live: tuple[Path, dict]) -> None:
    manifest = _manifest(live[0])
    zero = {"tp": 0, "pp": 0, "dp": 0, "cp": 0, "ep": 0, "vpp": 0}
    tp1 = {"tp": 1, "pp": 1, "dp": 2, "cp": 1, "ep": 1, "vpp": 1}
    with pytest.raises(LayoutError, match=r"tp=2 \(this relaunch 1\)"):
        relaunch_layout(manifest, 0, 2, tp1, zero)
    dp3 = {"tp": 2, "pp": 1, "dp": 3, "cp": 1, "ep": 1, "vpp": 1}
    with pytest.raises(LayoutError, match="data-parallel size 3 must divide the job's 2"):
        relaunch_layout(manifest, 0, 6, dp3, zero)
    tp2 = {"tp": 2, "pp": 1, "dp": 1, "cp": 1, "ep": 1, "vpp": 1}
    with pytest.raises(LayoutError, match="this relaunch 3"):
        relaunch_layout(manifest, 0, 3, tp2, zero)


# --- the relaunch, end to end ------------------------------------------------------------------


def test_print_plan_shows_the_relaunchs_world_size(
    tmp_path: Path, reference: Path, live: tuple[Path, dict]
) -> None:
    """The plan the explorer shows before anything runs: the ranks LAUNCH starts, and the
    job's beside them."""
    candidate, _ = live
    for launch, ranks in ((_launch(candidate, 2, "--tp", "2", "--dp", "1"), 2), ([], 4)):
        extra = ["--", *launch] if launch else []
        proc = subprocess.run(
            [str(ttrace_binary()), "serve", "--reference", str(reference), "--candidate",
             str(candidate), "--print-plan", "--cwd", str(REPO), *extra],
            env=env(TTRACE_PYTHON=sys.executable), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        plan = json.loads(proc.stdout)
        assert (plan["world_size"], plan["job_world_size"]) == (ranks, 4), plan


def test_tp2_relaunch_localizes_like_the_live_job(
    tmp_path: Path, reference: Path, live: tuple[Path, dict]
) -> None:
    candidate, live_report = live
    launch = _launch(candidate, 2, "--tp", "2", "--dp", "1")
    job = RelaunchJob(tmp_path / "serve", reference, candidate, "--", *launch, cwd=tmp_path)
    try:
        endpoint, token, ready = job.wait_serving()
        TIMES["ready_s"].append(ready)
        client = AgentClient(endpoint, token)
        try:
            hello, _ = client.call("hello")
        finally:
            client.close()
        assert hello["world_size"] == 2 and hello["parallel"]["dp"] == 2
        layout = hello["relaunch"]["layout"]
        assert layout["captured"]["world_size"] == 4 and layout["relaunched"]["world_size"] == 2
        assert layout["relaunched"]["parallel"]["dp"] == 1 and layout["ranks_per_rank"] == 2

        rc, report, text = localize(reference, candidate, endpoint, job.token_file, tmp_path / "a")
        assert rc == 1, text
        assert "layout     relaunched TP2, 2 ranks, of the captured TP2 x DP2, 4 ranks" in text
        assert verdicts(report) == verdicts(live_report)
        same = ("guilty", "guilty_phase", "guilty_parameters", "conclusion", "introduced")
        assert {k: report[k] for k in same} == {k: live_report[k] for k in same}
        assert report["guilty"] == ["loss"], report["conclusion"]
        for mine, theirs in zip(report["verdicts"], live_report["verdicts"], strict=True):
            assert mine["ratio"] == pytest.approx(theirs["ratio"], rel=1e-9)
            TIMES["small_s"].append(mine["agent_seconds"])

        rc, report, text = localize(
            reference, candidate, endpoint, job.token_file, tmp_path / "b",
            "--module", "layers.0.mlp.linear_fc1", "--phase", "reduction", "--shutdown",
        )  # fmt: skip
        assert rc == 2, text
        (refused,) = report["verdicts"]
        assert refused["verdict"] == "not replayable", refused
        assert refused["reason"].startswith("layout_too_small: "), refused
        assert "needs 2 data-parallel ranks; this agent has 1" in refused["reason"]
        assert job.proc.wait(timeout=120) == 0, job.output()
        assert "the job had 4 ranks" in job.output()
    finally:
        job.kill()


def test_tp1_relaunch_of_a_tp2_job_is_refused_with_the_reason(
    tmp_path: Path, reference: Path, live: tuple[Path, dict]
) -> None:
    candidate, _ = live
    # Without --inject: the example refuses a TP bug in a TP1 layout before its Tracer line.
    one = train_command(candidate, 2, "--tp", "1", "--dp", "1")
    launch = [a if a != "--nproc-per-node=2" else "--nproc-per-node=1" for a in one]
    job = RelaunchJob(tmp_path / "serve", reference, candidate, "--", *launch, cwd=tmp_path)
    try:
        # The rank exits 2 with the reason; torchrun passes a failed child on as 1.
        assert job.proc.wait(timeout=180) != 0, job.output()
        out = job.output()
        refused = "the candidate bundle is TP2 x DP2, 4 ranks, this relaunch single process"
        assert refused in out, out
        assert "tp=2 (this relaunch 1)" in out
        assert not job.endpoint_file.exists()
    finally:
        job.kill()


def test_report_fewer_devices_numbers() -> None:
    """For the issue note: time to ready, seconds per replayed module, TP2 vs the full job."""

    def mean(xs: list[float]) -> str:
        return f"{sum(xs) / len(xs):.3f}" if xs else "-"

    print(
        f"\nTP2 relaunch of a TP2xDP2 job: ready in {mean(TIMES['ready_s'])} s; seconds per "
        f"replayed module {mean(TIMES['small_s'])} (live 4-rank job {mean(TIMES['full_s'])})"
    )


# --- FSDP2: parameters split over data parallel ------------------------------------------------


def test_fsdp2_relaunch_on_one_device_refuses_modules_split_over_data_parallel(
    tmp_path: Path,
) -> None:
    """A real FSDP2 job (2 gloo ranks, `fully_shard` per block and at the root) relaunched by
    `ttrace serve` on one device, FSDP2 over a one-rank mesh: each parameter is whole there,
    half on each captured rank. A module's replay is refused with `layout_too_small` naming the
    parameter and both shapes, the gradient reduction with the data-parallel shortfall; no
    module is reported as agreeing (exit 2, `UNDETERMINED`)."""
    script = "tests.frameworks.fsdp_relaunch"
    reference, candidate = tmp_path / "ref", tmp_path / "cand"
    run_module(script, ["--reference", "--out", str(reference)], 1, 600)
    run_module(script, ["--out", str(candidate)], 2, 600)
    one = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=1",
           "-m", script, "--out", str(candidate)]  # fmt: skip
    job = RelaunchJob(
        tmp_path / "serve", reference, candidate, "--", *one, cwd=PYTHON_DIR, pythonpath=PYTHON_DIR
    )
    try:
        endpoint, _, _ = job.wait_serving()
        assert "(1 rank; the job had 2 ranks)" in job.output(), job.output()
        rc, report, text = localize(
            reference, candidate, endpoint, job.token_file, tmp_path / "fwd.json",
            "--module", "layers.0.feed_forward.w1", "--phase", "forward",
        )  # fmt: skip
        assert rc == 2, text
        (refused,) = report["verdicts"]
        assert refused["verdict"] == "not replayable", refused
        assert refused["reason"].startswith("layout_too_small: "), refused
        assert (
            "parameter layers.0.feed_forward.w1.weight is held as [64, 32] in this "
            in (refused["reason"])
        )
        assert "captured rank 0 held [32, 32] (DP2, 2 ranks)" in refused["reason"], refused
        assert "UNDETERMINED: not localized: no named module could be replayed" in text, text
        assert "agrees" not in text and report["undetermined"], text

        rc, report, text = localize(
            reference, candidate, endpoint, job.token_file, tmp_path / "red.json",
            "--module", "layers.0", "--phase", "reduction", "--shutdown",
        )  # fmt: skip
        assert rc == 2, text
        (refused,) = report["verdicts"]
        assert refused["reason"].startswith("layout_too_small: "), refused
        assert "needs 2 data-parallel ranks; this agent has 1" in refused["reason"], refused
        assert job.proc.wait(timeout=120) == 0, job.output()
    finally:
        job.kill()
