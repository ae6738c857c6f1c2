"""Bundles for the explorer's "Connect to GPU host" test: a reference and a TP2 candidate of
the example GPT (torchrun, gloo) whose rank 0 scales layers.1.mlp.linear_fc1's output by
1 + 1e-2 (introduced there). The candidate job exits after capture; its bundle is copied to
WORKDIR/copied, as a user copies it off a cluster, and only the copy is served.

    python ssh_bundles.py WORKDIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ttrace_testing.agent_job import env, train_command

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


GUILTY = "layers.1.mlp.linear_fc1"


def capture(out: Path, nproc: int, *args: str) -> None:
    shutil.rmtree(out, ignore_errors=True)  # bundles of an earlier build are not this one's
    cmd = train_command(out, nproc, *args)
    done = subprocess.run(cmd, cwd=REPO, env=env(), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"capture of {out} failed:\n{done.stdout}\n{done.stderr}")


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    work = Path(sys.argv[1])
    work.mkdir(parents=True, exist_ok=True)
    capture(work / "reference", 1, "--reference", "--perturbations", "1")
    capture(work / "job" / "candidate", 2, "--tp", "2", "--probe-delta", f"{GUILTY}:0.01")
    copied = work / "copied"
    shutil.rmtree(copied, ignore_errors=True)
    shutil.copytree(work / "reference", copied / "reference")
    shutil.copytree(work / "job" / "candidate", copied / "candidate")
    print(f"bundles ready in {copied}")


if __name__ == "__main__":
    main()
