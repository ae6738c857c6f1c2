"""`ttrace serve` as a user runs it: the real CLI relaunching a candidate from its bundles."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_paths import ttrace_binary

from ttrace_testing.agent_job import env


class RelaunchJob:
    """`ttrace serve --yes` on copied bundles; `endpoint`, `token` once it serves."""

    def __init__(
        self,
        workdir: Path,
        reference: Path,
        candidate: Path,
        *extra: str,
        cwd: Path | None = None,
        pythonpath: Path | None = None,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.endpoint_file = workdir / "endpoint"
        self.token_file = workdir / "token"
        self.log_path = workdir / "serve.log"
        self.log = self.log_path.open("w")
        self.started = time.monotonic()
        command = [
            str(ttrace_binary()), "serve", "--reference", str(reference),
            "--candidate", str(candidate), "--endpoint-file", str(self.endpoint_file),
            "--token-file", str(self.token_file), "--idle", "300", "--yes", *extra,
        ]  # fmt: skip
        variables = env(TTRACE_PYTHON=sys.executable)
        if pythonpath is not None:
            variables["PYTHONPATH"] = os.pathsep.join([str(pythonpath), variables["PYTHONPATH"]])
        self.proc = subprocess.Popen(
            command,
            cwd=cwd or workdir,
            env=variables,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()

    def wait_serving(self, timeout: float = 240) -> tuple[str, str, float]:
        """(endpoint, token, seconds from start to serving)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.endpoint_file.exists() and self.token_file.exists():
                text = self.endpoint_file.read_text()
                if text.endswith("\n"):
                    ready = time.monotonic() - self.started
                    return text.strip(), self.token_file.read_text().strip(), ready
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited with {self.proc.returncode}:\n{self.output()}")
            time.sleep(0.1)
        raise TimeoutError(f"serve did not start serving:\n{self.output()}")

    def ranks(self) -> list[int]:
        """Process ids of the relaunched ranks (python under torchrun under serve)."""
        out: list[int] = []
        frontier = [self.proc.pid]
        while frontier:
            pid = frontier.pop()
            path = Path(f"/proc/{pid}/task/{pid}/children")
            children = [int(x) for x in path.read_text().split()] if path.exists() else []
            if not children and pid != self.proc.pid:
                out.append(pid)
            frontier += children
        return sorted(out)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.log.close()
