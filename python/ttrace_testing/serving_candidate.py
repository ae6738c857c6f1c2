"""A candidate of the example GPT that serves replays after its capture (TTRACE_SERVE=1,
docs/localize.md): its lifecycle, its reference and the `ttrace localize` command against it.
Shared by the end-to-end localize test (tests/localize) and the localize benchmarks (bench/)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ttrace_testing.paths import REPO

SMALL = ["--layers", "2"]
LAYOUT = ["--tp", "2", "--dp", "2"]


def env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(REPO / "python"), str(REPO), os.environ.get("PYTHONPATH", "")])
    return dict(
        os.environ, OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=path, **extra
    )


def make_reference(out: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "examples.gpt.train",
        "--out",
        str(out),
        *SMALL,
        "--reference",
        "--perturbations",
        "2",
    ]
    subprocess.run(cmd, cwd=REPO, env=env(), check=True, capture_output=True, timeout=600)


class ServingJob:
    """A job that serves replays after its capture (TTRACE_SERVE=1, docs/localize.md) against
    `reference`: its bundle, endpoint and token files under `workdir`; its whole process group
    is killed on exit if it is still running. `command(bundle)` is the job's command line."""

    def __init__(self, workdir: Path, reference: Path, command: list[str], idle_s: int) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.bundle = workdir / "bundle"
        self.endpoint = workdir / "endpoint"
        self.token = workdir / "token"
        self.endpoint.unlink(missing_ok=True)
        self.log_path = workdir / "job.log"
        self._log = self.log_path.open("w")
        serve = {
            "TTRACE_SERVE": "1",
            "TTRACE_REFERENCE": str(reference),
            "TTRACE_AGENT_ENDPOINT_FILE": str(self.endpoint),
            "TTRACE_TOKEN_FILE": str(self.token),
            "TTRACE_AGENT_IDLE": str(idle_s),
        }
        self.proc = subprocess.Popen(
            command,
            cwd=REPO,
            env=env(**serve),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def __enter__(self) -> ServingJob:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self._log.close()

    def wait_serving(self, timeout: float = 900) -> str:
        """The agent's HOST:PORT once it listens; raises with the job's log if it exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.endpoint.exists() and self.endpoint.read_text().endswith("\n"):
                return self.endpoint.read_text().strip()
            if self.proc.poll() is not None:
                tail = self.log_path.read_text()[-3000:]
                raise RuntimeError(f"candidate exited with {self.proc.returncode}:\n{tail}")
            time.sleep(0.2)
        raise TimeoutError(f"candidate did not start serving in {timeout:.0f} s")


class ServingCandidate(ServingJob):
    """The end-to-end test's candidate (4 ranks, the demo's layout) with `bugs` injected."""

    def __init__(self, workdir: Path, reference: Path, bugs: list[str]) -> None:
        inject = [arg for bug in bugs for arg in ("--inject", bug)]
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node=4",
            "-m",
            "examples.gpt.train",
            "--out",
            str(workdir / "bundle"),
            *SMALL,
            *LAYOUT,
            *inject,
        ]
        super().__init__(workdir, reference, cmd, idle_s=300)


def localize_command(
    ttrace: Path, reference: Path, job: ServingCandidate, address: str, report: Path, *extra: str
) -> list[str]:
    """`ttrace localize` against a serving candidate, writing the JSON report."""
    return [
        str(ttrace), "localize", str(reference), str(job.bundle), "--agent", address,
        "--token-file", str(job.token), "--json", str(report), *extra,
    ]  # fmt: skip
