"""Start the example GPT as a serving candidate (torchrun, gloo) for the agent tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SMALL = ("--layers", "2")


def env(**extra: str) -> dict[str, str]:
    path = os.pathsep.join([str(REPO / "python"), str(REPO), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path, **extra)


def train_command(out: Path, nproc: int, *args: str) -> list[str]:
    if nproc == 1:
        return [sys.executable, "-m", "examples.gpt.train", "--out", str(out), *SMALL, *args]
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        f"--nproc-per-node={nproc}", "-m", "examples.gpt.train", "--out", str(out), *SMALL, *args,
    ]  # fmt: skip


class ServingJob:
    """A training job started with TTRACE_SERVE=1; `endpoint` and `token` once it serves."""

    def __init__(
        self,
        workdir: Path,
        reference: Path,
        nproc: int,
        *args: str,
        idle: float = 300,
        more_env: dict[str, str] | None = None,
    ):
        workdir.mkdir(parents=True, exist_ok=True)
        self.bundle = workdir / "bundle"
        self.endpoint_file = workdir / "endpoint"
        self.token_file = workdir / "token"
        self.log_path = workdir / "job.log"
        self.log = self.log_path.open("w")
        extra = {
            "TTRACE_SERVE": "1",
            "TTRACE_REFERENCE": str(reference),
            "TTRACE_AGENT_ENDPOINT_FILE": str(self.endpoint_file),
            "TTRACE_TOKEN_FILE": str(self.token_file),
            "TTRACE_AGENT_IDLE": str(idle),
            **(more_env or {}),
        }
        self.proc = subprocess.Popen(
            train_command(self.bundle, nproc, *args),
            cwd=REPO,
            env=env(**extra),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def wait_serving(self, timeout: float = 240) -> tuple[str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.endpoint_file.exists() and self.token_file.exists():
                text = self.endpoint_file.read_text()
                if text.endswith("\n"):
                    return text.strip(), self.token_file.read_text().strip()
            if self.proc.poll() is not None:
                raise RuntimeError(f"job exited with {self.proc.returncode}:\n{self.output()}")
            time.sleep(0.2)
        raise TimeoutError(f"job did not start serving:\n{self.output()}")

    def workers(self) -> list[int]:
        """Process ids of torchrun's worker processes."""
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(x) for x in path.read_text().split()] if path.exists() else []

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.log.close()
