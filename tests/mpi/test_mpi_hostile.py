"""Every case of the hostile-bundle catalogue (tests/hostile/make_catalogue.py) through
`ttrace diff` and `ttrace-mpi diff` on two processes: the same exit code, the same JSON byte
for byte (or none from both) and the same printed summary. Bundles half-copied, edited by hand
or broken by libhdf5's own regressions must be answered alike whether one process or several
read them.

Runs the built binaries from $TTRACE_BIN_DIR and the launcher $TTRACE_MPIEXEC (set by CTest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

BIN_DIR = os.environ.get("TTRACE_BIN_DIR")
MPIEXEC = os.environ.get("TTRACE_MPIEXEC")
pytestmark = pytest.mark.skipif(
    not BIN_DIR or not MPIEXEC, reason="TTRACE_BIN_DIR or TTRACE_MPIEXEC is not set"
)
HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
# Cases side by side: most of a case's time is starting the MPI job, not working.
WORKERS = 3


def answer(command: list[str], env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(command, capture_output=True, env=env, timeout=120)
    return done.returncode, done.stdout.decode("utf-8", "backslashreplace")


def both_answers(case: dict[str, Any], root: Path) -> str:
    """'' when both tools answer alike, else what differs."""
    assert BIN_DIR is not None and MPIEXEC is not None
    where, scratch = root / case["name"], root / "_scratch" / case["name"]
    scratch.mkdir(parents=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(scratch / "cache")}
    env.update(case.get("extra", {}).get("env", {}))
    pair = [str(where / case["ref"]), str(where / case["cand"])]
    single, mpi = scratch / "single.json", scratch / "mpi.json"
    one = answer([str(Path(BIN_DIR) / "ttrace"), "diff", "--no-cache", "--json", str(single),
                  *pair], env)  # fmt: skip
    many = answer(
        [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-n", "2",
         str(Path(BIN_DIR) / "ttrace-mpi"), "diff", "--no-cache", "--json", str(mpi), *pair],
        env,
    )  # fmt: skip
    problems = []
    if one[0] != many[0]:
        problems.append(f"exit {one[0]} vs {many[0]}")
    if single.exists() != mpi.exists() or (
        single.exists() and single.read_bytes() != mpi.read_bytes()
    ):
        problems.append("JSON differs")
    if one[1] != many[1]:
        problems.append("summary differs")
    return f"{case['name']}: {', '.join(problems)}" if problems else ""


def test_every_hostile_case_answered_as_ttrace_diff(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(HOSTILE / "make_catalogue.py"), str(tmp_path)],
        check=True,
        capture_output=True,
    )
    cases = json.loads((tmp_path / "CATALOGUE.json").read_text())
    assert len(cases) > 40
    with ThreadPoolExecutor(WORKERS) as pool:
        differ = [d for d in pool.map(lambda c: both_answers(c, tmp_path), cases) if d]
    assert not differ, "\n".join(differ)
