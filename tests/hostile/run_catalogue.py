"""Runs every hostile case through `ttrace validate`, `ttrace diff --json` and the explorer's
headless `--screenshot`, and reports what each front end answered.

    python tests/hostile/run_catalogue.py CATALOGUE_DIR BIN_DIR [validate,diff]

prints one line per case and tool (exit status, time, peak memory, the diagnostic codes, the
first stderr line) and ends with the cases whose answers are not the expected ones or whose
memory grew past twice the bundle's size plus an allowance. The pytest driver
(test_hostile_catalogue.py) asserts the same expectations case by case.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# A sanitized build runs two to three times slower: TTRACE_HOSTILE_TIMEOUT raises the limit.
TIMEOUT_S = float(os.environ.get("TTRACE_HOSTILE_TIMEOUT", "30"))
TOOLS = ("validate", "diff", "explorer")


@dataclass
class Answer:
    tool: str
    exit: int  # negative: killed by that signal; 124: timed out
    seconds: float
    stderr: str
    stdout: str
    codes: list[str] = field(default_factory=list)  # diff --json diagnostic codes
    peak_kib: int = 0  # peak resident memory of the tool or any process it ran (KiB)

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


Finished = tuple[bytes, bytes, int, int]


def wait_with_rusage(proc: subprocess.Popen[bytes], timeout: float) -> Finished:
    """stdout, stderr, exit status (124: killed after `timeout`) and the peak RSS in KiB of the
    process or any child it waited for (wait4's rusage; Popen.communicate would reap it)."""
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def pump(name: str, stream: Any) -> None:
        chunks[name].extend(iter(lambda: stream.read(65536), b""))

    readers = [
        threading.Thread(target=pump, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=pump, args=("err", proc.stderr), daemon=True),
    ]
    for t in readers:
        t.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        if time.monotonic() > deadline and not timed_out:
            os.killpg(proc.pid, signal.SIGKILL)
            timed_out = True
        time.sleep(0.01)
    proc.returncode = os.waitstatus_to_exitcode(status)
    for t in readers:
        t.join(timeout=5)
    code = 124 if timed_out else proc.returncode
    return b"".join(chunks["out"]), b"".join(chunks["err"]), code, usage.ru_maxrss


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
    out, err, code, peak_kib = wait_with_rusage(proc, TIMEOUT_S)
    answer = Answer(
        tool,
        code,
        time.monotonic() - start,
        err.decode("utf-8", "backslashreplace"),
        out.decode("utf-8", "backslashreplace"),
        peak_kib=peak_kib,
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


# The untouched pair every case is derived from: each tool's memory on it is the baseline.
BASE = {"name": "_base", "ref": "reference", "cand": "candidate", "validate": "candidate"}
# Memory a case may use beyond the baseline besides twice its bundle's size: diagnostics, an
# extra thread's stack and arena. Measured growth is at most about 4 MiB (the explorer, 53 cases).
ALLOWANCE_KIB = 16 * 1024


def run_all(
    root: Path, bins: Path, workers: int = 4, tools: tuple[str, ...] = TOOLS
) -> dict[str, dict[str, Answer]]:
    """Answers per case and tool, and under "_base" the tools' answers on the untouched pair."""
    cases = [*load_cases(root), BASE]
    jobs = [(c, tool) for c in cases for tool in tools]
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


def bundle_bytes(root: Path, case: dict[str, Any], tool: str) -> int:
    """Bytes of the regular files the tool is given (FIFOs and links to devices count 0)."""
    where = root / case["name"]
    sides = [case["validate"]] if tool == "validate" else [case["ref"], case["cand"]]
    total = 0
    for side in sides:
        for path in (where / side).rglob("*"):
            info = path.lstat()
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def memory_problems(
    root: Path, case: dict[str, Any], answers: dict[str, Answer], base: dict[str, Answer]
) -> list[str]:
    """Tools whose peak memory grew past twice the bundle's size plus the allowance."""
    found = []
    for tool, answer in answers.items():
        growth = answer.peak_kib - base[tool].peak_kib
        limit = 2 * bundle_bytes(root, case, tool) // 1024 + ALLOWANCE_KIB
        if growth > limit:
            found.append(f"{tool} peak {answer.peak_kib} KiB: +{growth} KiB > {limit} KiB")
    return found


def first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0][:150] if lines else ""


def main(argv: list[str]) -> int:
    root, bins = Path(argv[0]), Path(argv[1])
    # A build without the UI (the asan preset) has no explorer: `validate,diff` as third argument.
    tools = tuple(argv[2].split(",")) if len(argv) > 2 else TOOLS
    start = time.monotonic()
    results = run_all(root, bins, tools=tools)
    bad = 0
    for case in load_cases(root):
        answers = results[case["name"]]
        for tool in tools:
            a = answers[tool]
            codes = ",".join(sorted(set(a.codes)))[:60]
            print(
                f"{case['name']:28} {tool:9} exit {a.exit:4} {a.seconds:5.2f}s "
                f"{a.peak_kib / 1024:6.1f}MiB {codes:30} {first_line(a.stderr)}"
            )
        wrong = problems(case, answers) + memory_problems(root, case, answers, results["_base"])
        bad += bool(wrong)
        for w in wrong:
            print(f"  !! {w}")
    for tool in tools:
        print(f"baseline {tool}: {results['_base'][tool].peak_kib / 1024:.1f} MiB peak")
    print(f"{len(results) - 1} cases, {bad} answered wrongly, {time.monotonic() - start:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
