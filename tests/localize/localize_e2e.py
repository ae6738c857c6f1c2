"""End to end: a 4-rank torchrun (gloo) candidate of the example GPT serves replays
(TTRACE_SERVE=1), and `ttrace localize` must name the injected bug's module as the only
introduced one, the gradient reduction for a reduction bug, and nothing on a correct
candidate.

Usage: localize_e2e.py TTRACE_BIN WORKDIR [CASE...]   (CASE: a name from CASES below)
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ttrace_testing.serving_candidate import (
    ServingCandidate,
    localize_command,
    make_reference,
)

# case -> (bug-zoo bugs injected, expected exit status, expected guilty modules, expected phase)
CASES: dict[str, tuple[list[str], int, list[str], str | None]] = {
    "correct": ([], 0, [], None),
    "embedding": (["vocab-embedding-off-by-one"], 1, ["embedding"], None),
    "cross-entropy": (["vocab-ce-missing-allreduce"], 1, ["loss"], None),
    "dp-reduction": (["dp-grad-sum-not-mean"], 1, [], "gradient reduction"),
}


def replay_every_module(
    ttrace: Path, reference: Path, job: ServingCandidate, address: str, work: Path
) -> list[str]:
    """On a correct candidate every module, replayed forward and backward, must agree with
    the reference within its measured replay floor: the replay judgement's false-alarm check."""
    modules = [m["name"] for m in json.loads((job.bundle / "manifest.json").read_text())["modules"]]
    problems: list[str] = []
    wrong = work / "wrong.token"
    wrong.write_text("ab" * 32 + "\n")
    refused = subprocess.run(
        [str(ttrace), "localize", str(reference), str(job.bundle), "--agent", address,
         "--token-file", str(wrong), "--module", modules[0]],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if refused.returncode != 2 or "unauthenticated" not in refused.stderr:
        problems.append(f"a wrong token: exit {refused.returncode}, {refused.stderr!r}")
    for phase in ("forward", "backward"):
        report = work / f"every-{phase}.json"
        named = [arg for m in modules for arg in ("--module", m)]
        cmd = [
            str(ttrace),
            "localize",
            str(reference),
            str(job.bundle),
            "--agent",
            address,
            "--token-file",
            str(job.token),
            *named,
            "--phase",
            phase,
            "--json",
            str(report),
        ]
        if phase == "backward":
            cmd.append("--shutdown")
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        verdicts = json.loads(report.read_text())["verdicts"] if report.exists() else []
        judged = [v for v in verdicts if v["verdict"] != "not replayable"]
        worst = max((math.inf if v["ratio"] is None else v["ratio"] for v in judged), default=0.0)
        print(
            f"--- correct, every module {phase}: exit {done.returncode}, {len(judged)} of "
            f"{len(modules)} judged, worst replay ratio {worst:.3g}"
        )
        for v in verdicts:
            if v["verdict"] == "not replayable":
                print(f"    not replayable: {v['module']}: {v['reason']}")
        if done.returncode != 0:
            problems.append(f"correct {phase}: exit {done.returncode}\n{done.stdout}{done.stderr}")
        if len(judged) < len(modules) // 2:
            problems.append(f"correct {phase}: only {len(judged)} modules could be replayed")
    return problems


def run_case(ttrace: Path, work: Path, reference: Path, name: str) -> list[str]:
    bugs, want_exit, want_guilty, want_phase = CASES[name]
    problems: list[str] = []
    with ServingCandidate(work / name, reference, bugs) as job:
        address = job.wait_serving(timeout=400)
        report = work / f"{name}.json"
        started = time.monotonic()
        extra = ["--no-cache", *([] if not bugs else ["--shutdown"])]
        cmd = localize_command(ttrace, reference, job, address, report, *extra)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - started
        print(f"--- {name}: exit {done.returncode} in {seconds:.1f} s\n{done.stdout}{done.stderr}")
        if done.returncode != want_exit:
            problems.append(f"{name}: exit {done.returncode}, expected {want_exit}")
        result = json.loads(report.read_text())
        if result["guilty"] != want_guilty:
            problems.append(f"{name}: guilty {result['guilty']}, expected {want_guilty}")
        if result["guilty_phase"] != want_phase:
            problems.append(f"{name}: phase {result['guilty_phase']}, expected {want_phase}")
        introduced = [v["module"] for v in result["verdicts"] if v["verdict"] == "introduced"]
        if want_guilty and introduced != want_guilty:
            problems.append(f"{name}: introduced {introduced}, expected only {want_guilty}")
        if not bugs:
            problems += replay_every_module(ttrace, reference, job, address, work / name)
        if job.proc.wait(timeout=60) != 0:  # --shutdown ends the job cleanly
            problems.append(f"{name}: the job exited with {job.proc.returncode} after shutdown")
    return problems


def main() -> int:
    ttrace, work = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    cases = sys.argv[3:] or list(CASES)
    if work.exists():
        shutil.rmtree(work)  # bundles of an earlier build must not be compared with this one
    work.mkdir(parents=True)
    reference = work / "reference"
    make_reference(reference)
    problems = [p for case in cases for p in run_case(ttrace, work, reference, case)]
    for p in problems:
        print("FAIL:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
