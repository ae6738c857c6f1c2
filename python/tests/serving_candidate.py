"""A candidate job (`python -m MODULE ARGS` from python/, under torchrun) that serves
replays after its capture (`TTRACE_SERVE=1`), and `ttrace localize` against an agent, for
the localize tests on framework code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_paths import ttrace_binary

PYTHON_DIR = Path(__file__).resolve().parents[1]
TIMES: dict[str, float] = {}


class ServingCandidate:
    """`python -m MODULE ARGS` under torchrun, serving replays after its capture."""

    def __init__(self, work: Path, reference: Path, module: str, args: list[str], nproc: int):
        work.mkdir(parents=True, exist_ok=True)
        self.bundle = work / "candidate"
        self.endpoint_file = work / "endpoint"
        self.token_file = work / "token"
        self.log_path = work / "job.log"
        self.log = self.log_path.open("w")
        env = dict(
            os.environ,
            PYTHONPATH=str(PYTHON_DIR),
            OMP_NUM_THREADS="1",
            PYTHONWARNINGS="ignore",
            TTRACE_SERVE="1",
            TTRACE_REFERENCE=str(reference),
            TTRACE_AGENT_ENDPOINT_FILE=str(self.endpoint_file),
            TTRACE_TOKEN_FILE=str(self.token_file),
            TTRACE_AGENT_IDLE="300",
        )
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        command = [sys.executable, *launcher, "-m", module, "--out", str(self.bundle), *args]
        self.proc = subprocess.Popen(
            command,
            cwd=PYTHON_DIR,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def endpoint(self, timeout: float = 600) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.endpoint_file.exists() and self.endpoint_file.read_text().endswith("\n"):
                return self.endpoint_file.read_text().strip()
            if self.proc.poll() is not None:
                raise RuntimeError(f"the candidate exited {self.proc.returncode}:\n{self.output()}")
            time.sleep(0.2)
        raise TimeoutError(f"the candidate did not start serving:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        return self.log_path.read_text()[-6000:]

    def localize(self, reference: Path, out: Path, *extra: str) -> tuple[int, dict, str]:
        return localize(reference, self.bundle, self.endpoint(), self.token_file, out, *extra)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def localize(
    reference: Path, bundle: Path, endpoint: str, token_file: Path, out: Path, *extra: str
) -> tuple[int, dict, str]:
    """`ttrace localize` against an agent: (exit code, JSON report, its output)."""
    command = [
        str(ttrace_binary()), "localize", str(reference), str(bundle),
        "--agent", endpoint, "--token-file", str(token_file),
        "--json", str(out), "--no-cache", *extra,
    ]  # fmt: skip
    started = time.monotonic()
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    TIMES[out.stem] = time.monotonic() - started
    report = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, report, proc.stdout + proc.stderr
