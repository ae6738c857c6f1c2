"""`ttrace serve`: localize from bundles copied away, the candidate job long gone.

The example GPT's candidates (torchrun, gloo) capture and exit; their bundles are copied to
another folder; the real `ttrace serve` relaunches the script from them in replay mode, and
the real `ttrace localize` gets the same verdicts as from the live job kept up after
capture. Also: what the bundle records for a relaunch (no secrets), the code fingerprint
reporting a changed model file, confirmation, and a rank killed mid-replay.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from cli_paths import ttrace_binary
from serve_job import RelaunchJob
from torch import nn

from ttrace.agent.relaunch import RelaunchError, check_layout
from ttrace.agent.relaunch_command import RelaunchCommandError, relaunch_command
from ttrace.capture import Tracer
from ttrace.capture.call_record import decode_template, encode_template
from ttrace.capture.call_template import CallTemplate
from ttrace.capture.launch_record import numeric_env
from ttrace_testing.agent_client import AgentClient
from ttrace_testing.agent_job import REPO, ServingJob, env, train_command

TIMES: dict[str, list[float]] = {"ready_s": [], "module_s": [], "added_fraction": []}
SECRETS = {"MY_API_TOKEN": "tok-123", "NVTE_SECRET_KEY": "k-456", "HF_PASSWORD": "p-789"}


# --- what the capture records ----------------------------------------------------------------


def test_env_allowlist_never_records_secrets() -> None:
    environ = {
        "OMP_NUM_THREADS": "1",
        "NCCL_ALGO": "Ring",
        "NVTE_FLASH_ATTN": "0",
        "NVTE_API_KEY": "secret",
        "CUBLAS_AUTH_TOKEN": "secret",
        "HF_TOKEN": "secret",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "HOME": "/root",
        "PATH": "/bin",
    }
    assert numeric_env(environ) == {
        "NCCL_ALGO": "Ring",
        "NVTE_FLASH_ATTN": "0",
        "OMP_NUM_THREADS": "1",
    }


class _Kind:
    pass


class _WithConfig(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.config = _Kind()

    def forward(self, x: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
        return x


def test_call_templates_survive_the_bundle() -> None:
    """Values come back as values, the module's own objects as its attributes, anything
    else makes the call not replayable from the bundles, naming the argument."""
    module = _WithConfig()
    x = torch.ones(2, 3, requires_grad=True)
    args = (x, None, 3, float("inf"), torch.bfloat16, (1, "a"), module.config)
    template = CallTemplate.of_call(args, {"flag": True, "other": _Kind()})
    data = json.loads(json.dumps(encode_template(template, module)))
    back = decode_template(data, module)
    assert back.args[0].index == "0" and back.args[0].shape == (2, 3)
    assert back.args[1:6] == (None, 3, float("inf"), torch.bfloat16, (1, "a"))
    assert back.args[6] is module.config
    assert back.kwargs["flag"] is True
    assert "argument other" in back.why_not_replayable()
    assert "_Kind" in back.why_not_replayable()


# --- jobs --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "bundle"
    cmd = train_command(out, 1, "--reference", "--perturbations", "1")
    subprocess.run(cmd, cwd=REPO, env=env(), check=True, capture_output=True, timeout=300)
    return out


def localize(
    reference: Path, candidate: Path, endpoint: str, token_file: Path, out: Path, *extra: str
) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [
            str(ttrace_binary()),
            "localize",
            str(reference),
            str(candidate),
            "--agent",
            endpoint,
            "--token-file",
            str(token_file),
            "--json",
            str(out),
            "--no-cache",
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, report, proc.stdout + proc.stderr


def verdicts(report: dict) -> list[tuple]:
    return [
        (v["module"], v["phase"], v["iteration"], v["micro_batch"], v.get("verdict"))
        for v in report["verdicts"]
    ]


TP2_DP2 = ("--tp", "2", "--dp", "2")
ZOO = {  # bug: (ranks, layout)
    "vocab-ce-missing-allreduce": (4, TP2_DP2),
    "sp-norm-grad-not-reduced": (4, TP2_DP2),
    "dist-opt-wrong-offset": (2, ("--dp", "2", "--dist-optimizer")),
    "cp-attn-backward": (2, ("--cp", "2")),
}


@pytest.mark.parametrize("bug", list(ZOO))
def test_serve_gives_the_live_jobs_verdicts(tmp_path: Path, reference: Path, bug: str) -> None:
    nproc, layout = ZOO[bug]
    more_env = {**SECRETS, "NCCL_ALGO": "Ring"}
    live = ServingJob(
        tmp_path / "live", reference, nproc, *layout, "--inject", bug, more_env=more_env
    )
    try:
        endpoint, _ = live.wait_serving()
        rc_live, live_report, text = localize(
            reference, live.bundle, endpoint, live.token_file, tmp_path / "live.json", "--shutdown"
        )
        assert rc_live == 1, text
        assert live.wait(timeout=120) == 0, live.output()
    finally:
        live.kill()
    manifest = (live.bundle / "manifest.json").read_text()
    assert not any(v in manifest for v in SECRETS.values()), "a secret reached the bundle"
    assert json.loads(manifest)["replay"]["launch"]["env"]["NCCL_ALGO"] == "Ring"
    _record_size(live.bundle)

    copied = tmp_path / "copied"
    shutil.copytree(reference, copied / "reference")
    shutil.copytree(live.bundle, copied / "candidate")
    shutil.rmtree(live.bundle)  # the job's own bundle is gone: only the copies remain
    job = RelaunchJob(tmp_path / "serve", copied / "reference", copied / "candidate", cwd=tmp_path)
    try:
        endpoint, _, ready = job.wait_serving()
        TIMES["ready_s"].append(ready)
        rc, report, text = localize(
            copied / "reference",
            copied / "candidate",
            endpoint,
            job.token_file,
            tmp_path / "serve.json",
            "--shutdown",
        )
        assert rc == rc_live, text
        assert "the same code as captured" in text
        assert verdicts(report) == verdicts(live_report)
        same = ("guilty", "guilty_phase", "guilty_parameters", "conclusion", "introduced")
        assert {k: report[k] for k in same} == {k: live_report[k] for k in same}
        assert report["introduced"] and (report["guilty"] or report["guilty_phase"]), report
        for mine, theirs in zip(report["verdicts"], live_report["verdicts"], strict=True):
            assert mine["ratio"] == pytest.approx(theirs["ratio"], rel=1e-9)
            TIMES["module_s"].append(mine["agent_seconds"])
        assert job.proc.wait(timeout=120) == 0, job.output()
        assert "no training step runs" in job.output()
    finally:
        job.kill()


def _record_size(bundle: Path) -> None:
    manifest = json.loads((bundle / "manifest.json").read_text())
    added = len(json.dumps(manifest["replay"], indent=2))
    total = sum(p.stat().st_size for p in bundle.iterdir())
    TIMES["added_fraction"].append(added / total)


# --- a capture from a code tree the tests may change -----------------------------------------


@pytest.fixture(scope="module")
def code_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("code")
    shutil.copytree(
        REPO / "examples", tree / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tree


@pytest.fixture(scope="module")
def tp2_bundle(tmp_path_factory: pytest.TempPathFactory, code_tree: Path) -> Path:
    out = tmp_path_factory.mktemp("tp2") / "bundle"
    variables = env()
    variables["PYTHONPATH"] = os.pathsep.join([str(code_tree), variables["PYTHONPATH"]])
    cmd = train_command(out, 2, "--tp", "2")
    subprocess.run(cmd, cwd=code_tree, env=variables, check=True, capture_output=True, timeout=300)
    return out


def test_serve_refuses_without_confirmation(
    tmp_path: Path, reference: Path, tp2_bundle: Path
) -> None:
    proc = subprocess.run(
        [
            str(ttrace_binary()),
            "serve",
            "--reference",
            str(reference),
            "--candidate",
            str(tp2_bundle),
            "--endpoint-file",
            str(tmp_path / "ep"),
        ],
        env=env(TTRACE_PYTHON=sys.executable),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert "--nproc-per-node=2 -m examples.gpt.train --out" in proc.stderr
    assert proc.stderr.rstrip().endswith("--yes to confirm")
    assert "not confirmed" in proc.stderr and "--yes" in proc.stderr
    assert not (tmp_path / "ep").exists()


def test_serve_refuses_a_bundle_without_launch_record(tmp_path: Path, reference: Path) -> None:
    proc = subprocess.run(
        [
            str(ttrace_binary()),
            "serve",
            "--reference",
            str(reference),
            "--candidate",
            str(reference),
            "--yes",
        ],
        env=env(TTRACE_PYTHON=sys.executable),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "records no launch" in proc.stderr


def test_changed_model_file_is_reported(
    tmp_path: Path, reference: Path, tp2_bundle: Path, code_tree: Path
) -> None:
    norm = code_tree / "examples" / "gpt" / "layers" / "norm.py"
    original = norm.read_text()
    norm.write_text(original + "\n# edited after the capture\n")
    job = RelaunchJob(tmp_path / "serve", reference, tp2_bundle, pythonpath=code_tree)
    try:
        endpoint, token, _ = job.wait_serving()
        header, _ = _hello(endpoint, token)
        changes = header["relaunch"]["code_changes"]
        assert len(changes) == 1 and changes[0].startswith("examples.gpt.layers.norm:"), changes
        rc, _, text = localize(
            reference,
            tp2_bundle,
            endpoint,
            job.token_file,
            tmp_path / "loc.json",
            "--module",
            "layers.0.input_layernorm",
            "--shutdown",
        )
        head = text.split("module ")[0]
        assert "CHANGED since capture" in head and "examples.gpt.layers.norm" in head, text
        assert rc in (0, 1), text
        assert "ttrace serve: code: examples.gpt.layers.norm" in job.output()
    finally:
        norm.write_text(original)
        job.kill()


def test_launch_is_replaced_and_multi_node_needs_it(tmp_path: Path, tp2_bundle: Path) -> None:
    manifest = json.loads((tp2_bundle / "manifest.json").read_text())
    launch = ["srun", "-n", "2", "python"]
    command = relaunch_command(manifest, tp2_bundle, tp2_bundle, launch, {}, cwd=tmp_path)
    assert command.argv[:4] == launch
    assert command.argv[4:] == manifest["replay"]["launch"]["argv"]
    assert command.env["TTRACE_REPLAY"] == "1" and "TTRACE_SERVE" not in command.env
    manifest["replay"]["launch"]["launcher"].update(nnodes=2, local_world_size=1)
    with pytest.raises(RelaunchCommandError, match="give the launcher after `--`"):
        relaunch_command(manifest, tp2_bundle, tp2_bundle, [], {}, cwd=tmp_path)


def test_relaunch_with_another_world_size_is_refused(tp2_bundle: Path) -> None:
    """The check every relaunched rank makes before serving, on a real one-process Tracer."""
    model = nn.Sequential(nn.Linear(4, 4))
    tracer = Tracer(model, None, tp2_bundle.parent / "unused", role="candidate")
    try:
        manifest = json.loads((tp2_bundle / "manifest.json").read_text())
        with pytest.raises(
            RelaunchError,
            match=r"the candidate bundle is TP2, 2 ranks, this relaunch single process",
        ):
            check_layout(tracer, manifest)
    finally:
        tracer.close()


def test_malformed_replay_record_is_a_clear_error(
    tmp_path: Path, reference: Path, tp2_bundle: Path, code_tree: Path
) -> None:
    broken = tmp_path / "candidate"
    shutil.copytree(tp2_bundle, broken)
    manifest = json.loads((broken / "manifest.json").read_text())
    manifest["replay"]["ranks"][1]["calls"] = {"embedding": [[0, 0, 99]]}  # no such template
    (broken / "manifest.json").write_text(json.dumps(manifest))
    job = RelaunchJob(tmp_path / "serve", reference, broken, pythonpath=code_tree)
    try:
        assert job.proc.wait(timeout=180) != 0
        output = job.output()
        assert f"{broken / 'manifest.json'}: its `replay` section is malformed" in output, output
        assert not job.endpoint_file.exists()
    finally:
        job.kill()


def test_rank_killed_mid_replay_is_a_clear_error(
    tmp_path: Path, reference: Path, tp2_bundle: Path, code_tree: Path
) -> None:
    """`ttrace localize` walks every module's backward; a rank is killed while the agent is
    busy replaying: localize ends with a clear error (no hang), and so does the relaunch."""
    job = RelaunchJob(tmp_path / "serve", reference, tp2_bundle, pythonpath=code_tree)
    try:
        endpoint, token, _ = job.wait_serving()
        ranks = job.ranks()
        assert len(ranks) == 2, ranks
        header, _ = _hello(endpoint, token)
        modules = [m["name"] for m in header["modules"] if m["replayable"]]
        args = [a for m in modules for a in ("--module", m)]
        command = [
            str(ttrace_binary()),
            "localize",
            str(reference),
            str(tp2_bundle),
            "--agent",
            endpoint,
            "--token-file",
            str(job.token_file),
            "--phase",
            "backward",
            *args,
        ]
        started = time.monotonic()
        localize_proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert _wait_busy(endpoint, token), "the agent was never seen replaying"
        os.kill(ranks[-1], signal.SIGKILL)
        output, _ = localize_proc.communicate(timeout=120)
        elapsed = time.monotonic() - started
        assert localize_proc.returncode == 2, output
        # Whichever the client sees first: the connection dropping as the agent exits, its
        # pings going unanswered, or the agent's own replay_failed answer.
        clear = ("dropped (the agent exited", "stopped answering", "replay_failed")
        assert any(c in output for c in clear), output
        # The last line says the walk stopped; never an answer such as "nothing diverges".
        assert "STOPPED: not localized: the replays stopped at an error (" in output, output
        assert "nothing diverges" not in output and "nothing introduced" not in output, output
        assert elapsed < 90, f"localize took {elapsed:.0f} s to notice"
        assert job.proc.wait(timeout=60) != 0, job.output()
    finally:
        job.kill()


def _hello(endpoint: str, token: str) -> tuple[dict, list[bytes]]:
    client = AgentClient(endpoint, token)
    try:
        return client.call("hello")
    finally:
        client.close()


def _wait_busy(endpoint: str, token: str, timeout: float = 60) -> bool:
    """Poll with pings (answered at once, also mid-replay) until the agent is replaying."""
    client = AgentClient(endpoint, token, timeout_s=10)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            header, _ = client.call("ping")
            if header.get("busy"):
                return True
            time.sleep(0.005)
        return False
    finally:
        client.close()


def test_report_serve_numbers() -> None:
    """For the issue note: time to ready, seconds per replayed module, size added."""
    if TIMES["ready_s"]:
        print(
            "\nttrace serve: ready in "
            + ", ".join(f"{t:.1f}" for t in TIMES["ready_s"])
            + f" s; {len(TIMES['module_s'])} replays, mean "
            f"{sum(TIMES['module_s']) / max(1, len(TIMES['module_s'])):.3f} s; replay record "
            + ", ".join(f"{100 * f:.2f}%" for f in TIMES["added_fraction"])
            + " of the candidate bundle"
        )


# --- a front end over ssh: the plan first, then the relaunch driven through a pipe ----------


def _relaunch_pids(candidate: Path) -> list[int]:
    """Processes whose environment says they serve `candidate` (the relaunch and its ranks)."""
    mark = f"TTRACE_REPLAY_CANDIDATE={candidate.resolve()}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark in (entry / "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_serve_over_stdio_runs_only_the_plan_shown_and_stops_when_input_ends(
    tmp_path: Path, reference: Path, tp2_bundle: Path, code_tree: Path
) -> None:
    base = [str(ttrace_binary()), "serve", "--reference", str(reference)]
    base += ["--candidate", str(tp2_bundle), "--cwd", str(code_tree)]
    variables = env(TTRACE_PYTHON=sys.executable)
    variables["PYTHONPATH"] = os.pathsep.join([str(code_tree), variables["PYTHONPATH"]])
    shown = subprocess.run(
        [*base, "--print-plan"], env=variables, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    plan = json.loads(shown.stdout)
    assert plan["world_size"] == 2 and "examples.gpt.train" in plan["argv"]
    assert "--nproc-per-node=2 -m examples.gpt.train" in plan["command"]
    assert len(plan["digest"]) == 64 and not _relaunch_pids(tp2_bundle)

    other = subprocess.run(
        [*base, "--stdio", "--plan-digest", "0" * 64],
        env=variables,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 3 and "not the one confirmed" in other.stderr, other.stderr

    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [*base, "--stdio", "--plan-digest", plan["digest"]],
        env=variables,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        events = []
        assert proc.stdout is not None and proc.stdin is not None
        for line in proc.stdout:
            events.append(json.loads(line))
            if events[-1]["event"] == "serving":
                break
        assert [e["event"] for e in events] == ["started", "serving"], events
        endpoint, token = events[-1]["endpoint"], events[-1]["token"]
        assert len(token) == 64
        cmdlines = [p.read_bytes() for p in Path("/proc").glob("[0-9]*/cmdline") if p.exists()]
        assert not any(token.encode() in c for c in cmdlines), "the token is on a command line"
        header, _ = _hello(endpoint, token)
        manifest = json.loads((tp2_bundle / "manifest.json").read_text())
        assert header["identity"]["candidate"]["capture_id"] == manifest["capture_id"]
        assert len(_relaunch_pids(tp2_bundle)) >= 3  # torchrun and its two ranks
        # `ttrace localize` with another capture as the candidate: refused before any replay.
        token_file = tmp_path / "token"
        token_file.write_text(token + "\n")
        token_file.chmod(0o600)
        rc, _, text = localize(reference, reference, endpoint, token_file, tmp_path / "o.json")
        assert rc == 2 and "the agent serves another candidate (capture" in text, text
        proc.stdin.close()  # the front end is gone: everything it started stops
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while _relaunch_pids(tp2_bundle) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _relaunch_pids(tp2_bundle)
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
