"""Runs every hostile case through `ttrace validate`, `ttrace diff --json` and the explorer's
headless `--screenshot`, and reports what each front end answered.

    python tests/hostile/run_catalogue.py CATALOGUE_DIR BIN_DIR

prints one line per case and tool (exit status, time, the diagnostic codes, the first stderr
line) and ends with the cases whose answers are not the expected ones. The pytest driver
(test_hostile_catalogue.py) asserts the same expectations case by case.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMEOUT_S = 30.0
TOOLS = ("validate", "diff", "explorer")


@dataclass
class Answer:
    tool: str
    exit: int  # negative: killed by that signal; 124: timed out
    seconds: float
    stderr: str
    stdout: str
    codes: list[str] = field(default_factory=list)  # diff --json diagnostic codes

    def crashed(self) -> bool:
        return self.exit < 0 or self.exit > 2

    def text(self) -> str:
        return self.stderr + self.stdout


def command(tool: str, case: dict[str, Any], root: Path, bins: Path, scratch: Path) -> list[str]:
    where = root / case["name"]
    ref, cand = str(where / case["ref"]), str(where / case["cand"])
    if tool == "validate":
        return [str(bins / "ttrace"), "validate", str(where / case["validate"])]
    if tool == "diff":
        return [
            str(bins / "ttrace"),
            "diff",
            "--no-cache",
            "--json",
            str(scratch / "diff.json"),
            ref,
            cand,
        ]
    return [str(bins / "ttrace-explorer"), "--screenshot", str(scratch / "shot.png"), ref, cand]


def run_tool(tool: str, case: dict[str, Any], root: Path, bins: Path) -> Answer:
    scratch = root / "_scratch" / f"{case['name']}-{tool}"
    scratch.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CACHE_HOME=str(scratch / "cache"))
    env.update(case.get("extra", {}).get("env", {}))  # e.g. a short indexing deadline
    start = time.monotonic()
    # A new session, so a hung tool and anything it started can be killed as a group.
    proc = subprocess.Popen(
        command(tool, case, root, bins, scratch),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = 124
    answer = Answer(
        tool,
        code,
        time.monotonic() - start,
        err.decode("utf-8", "backslashreplace"),
        out.decode("utf-8", "backslashreplace"),
    )
    report = scratch / "diff.json"
    if tool == "diff" and report.exists():
        try:
            doc = json.loads(report.read_text(encoding="utf-8"))
            answer.codes = [d["code"] for d in doc.get("diagnostics", [])]
            answer.codes += [
                f["code"] for t in doc.get("tensors", []) for f in t.get("findings", [])
            ]
        except (ValueError, UnicodeDecodeError) as error:
            answer.codes = [f"unreadable-json: {error}"]
    return answer


def load_cases(root: Path) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((root / "CATALOGUE.json").read_text("utf-8"))
    return cases


def run_all(root: Path, bins: Path, workers: int = 4) -> dict[str, dict[str, Answer]]:
    cases = load_cases(root)
    jobs = [(c, tool) for c in cases for tool in TOOLS]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda job: run_tool(job[1], job[0], root, bins), jobs))
    results: dict[str, dict[str, Answer]] = {c["name"]: {} for c in cases}
    for (c, tool), answer in zip(jobs, answers, strict=True):
        results[c["name"]][tool] = answer
    return results


def problems(case: dict[str, Any], answers: dict[str, Answer]) -> list[str]:
    """What is wrong with the answers to one case; empty when all three are as expected."""
    expect = case["expect"]
    found = []
    for tool, answer in answers.items():
        wanted = expect["exit"]
        if tool == "validate" and expect["validate_exit"] is not None:
            wanted = expect["validate_exit"]
        if answer.exit == 124:
            found.append(f"{tool} hung (killed after {TIMEOUT_S:.0f} s)")
        elif answer.crashed():
            found.append(f"{tool} crashed (exit {answer.exit})")
        elif answer.exit != wanted:
            found.append(f"{tool} exit {answer.exit}, expected {wanted}")
        if wanted == expect["exit"] and expect["phrase"] not in answer.text():
            found.append(f"{tool} does not say {expect['phrase']!r}")
    diff = answers["diff"]
    if expect["code"] and expect["code"] not in diff.codes:
        found.append(f"diff --json has no '{expect['code']}' diagnostic (codes: {diff.codes[:6]})")
    return found


def first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:150] if lines else ""


def main(argv: list[str]) -> int:
    root, bins = Path(argv[0]), Path(argv[1])
    start = time.monotonic()
    results = run_all(root, bins)
    bad = 0
    for case in load_cases(root):
        answers = results[case["name"]]
        for tool in TOOLS:
            a = answers[tool]
            codes = ",".join(sorted(set(a.codes)))[:60]
            print(
                f"{case['name']:28} {tool:9} exit {a.exit:4} {a.seconds:5.2f}s {codes:30} "
                f"{first_line(a.stderr)}"
            )
        wrong = problems(case, answers)
        bad += bool(wrong)
        for w in wrong:
            print(f"  !! {w}")
    print(f"{len(results)} cases, {bad} answered wrongly, {time.monotonic() - start:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
