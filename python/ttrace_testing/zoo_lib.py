"""Shared by the bug-zoo benchmarks and tests: run the example GPT (reference or candidate),
run `ttrace diff`, and read the verdict and localization out of its JSON report."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ttrace_testing.paths import REPO
from ttrace_testing.serving_candidate import ServingJob  # one lifecycle for tests and bench

ROUTING_FILE = "routing.pt"  # examples/gpt/routing_replay.py FILENAME, beside the bundle
# CTest's TTRACE_BIN_DIR (the build under test) first: another build folder's binary may be stale.
TTRACE = (
    Path(os.environ["TTRACE_BIN_DIR"]) / "ttrace"
    if os.environ.get("TTRACE_BIN_DIR")
    else Path(os.environ.get("TTRACE_BIN", REPO / "build" / "bin" / "ttrace"))
)


def require_cli() -> None:
    """Fails (never skips) when the CLI under test is not built."""
    if not TTRACE.is_file():
        raise FileNotFoundError(f"{TTRACE} is not built; run ./scripts/test.sh or build first")


# Two layers keep a run to seconds on two cores; pipeline stages still get one layer each.
SMALL = ("--layers", "2")

FORWARD_KINDS = {"forward_input", "forward_output"}
BACKWARD_KINDS = {"output_grad", "input_grad", "param_grad"}


@dataclass(frozen=True)
class Config:
    """A parallel layout: candidate flags and process count; `shared` flags go to both runs."""

    name: str
    nproc: int
    cand: tuple[str, ...]
    shared: tuple[str, ...] = ()


CONFIGS: dict[str, Config] = {
    c.name: c
    for c in (
        Config("TP2", 2, ("--tp", "2")),
        Config("TP2xPP2", 4, ("--tp", "2", "--pp", "2")),
        Config("TP2xDP2", 4, ("--tp", "2", "--dp", "2")),
        Config("PP2", 2, ("--pp", "2")),
        Config("DP2", 2, ("--dp", "2")),
        Config("CP2", 2, ("--cp", "2")),
        Config("DP2+dist-opt", 2, ("--dp", "2", "--dist-optimizer")),
        Config("EP2", 2, ("--dp", "2", "--ep", "2"), ("--experts", "4")),
        Config("TP2xCP2", 4, ("--tp", "2", "--cp", "2")),
        Config("TP2+clip", 2, ("--tp", "2"), ("--clip-grad", "0.05", "--sgd")),
        Config("TP2+MoE", 2, ("--tp", "2"), ("--experts", "4")),
        Config("PP2+tied", 2, ("--pp", "2"), ("--tie-embeddings",)),
        Config("TP2xPP2+tied", 4, ("--tp", "2", "--pp", "2"), ("--tie-embeddings",)),
    )
}


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(REPO / "python"), str(REPO), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)


def train_command(out: Path, nproc: int, *args: str) -> list[str]:
    """examples.gpt.train, through torchrun when nproc > 1."""
    cmd = [sys.executable, "-m", "examples.gpt.train", "--out", str(out), *SMALL, *args]
    if nproc > 1:
        cmd[1:3] = [
            "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", "examples.gpt.train",
        ]  # fmt: skip
    return cmd


def run_train(out: Path, nproc: int, *args: str, timeout: float = 600) -> str:
    """examples.gpt.train, through torchrun when nproc > 1; raises with its output on error."""
    cmd = train_command(out, nproc, *args)
    proc = subprocess.run(
        cmd, cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
    return proc.stdout


# The layouts a reference may run in (docs/bug-zoo.md, "A distributed reference"): processes
# and the parallel sizes given to the example's --reference.
REFERENCE_LAYOUTS: dict[str, tuple[int, tuple[str, ...]]] = {
    "single": (1, ()),
    "tp2": (2, ("--tp", "2")),
    "tp2dp2": (4, ("--tp", "2", "--dp", "2")),
}


def run_reference(
    out: Path,
    cfg: Config,
    precision: str,
    seed: int,
    perturbations: int = 2,
    layout: str = "single",
    routing_from: Path | None = None,
) -> Path:
    """A reference of `cfg`'s model in `layout`. Only a single-process reference records the
    expert routing; a distributed one with experts replays `routing_from`'s (the single
    reference's), as the candidates do, so both references route every token alike."""
    nproc, sizes = REFERENCE_LAYOUTS[layout]
    replay: tuple[str, ...] = ()
    if has_experts(cfg) and layout != "single":
        if routing_from is None:
            raise ValueError(f"{cfg.name} has experts: a {layout} reference needs routing_from=")
        replay = ("--routing-replay", str(Path(routing_from) / ROUTING_FILE))
    run_train(
        out, nproc, "--reference", "--perturbations", str(perturbations), *sizes,
        "--precision", precision, "--seed", str(seed), *cfg.shared, *replay,
    )  # fmt: skip
    return out


def has_experts(cfg: Config) -> bool:
    return "--experts" in cfg.shared


def candidate_args(
    cfg: Config, precision: str, seed: int, *extra: str, ref: Path | None = None
) -> tuple[str, ...]:
    """With experts the candidate replays `ref`'s routing (the token -> expert choices its
    reference run recorded), so a round-off flip of a near tie cannot reroute a token."""
    replay: tuple[str, ...] = ()
    if has_experts(cfg):
        if ref is None:
            raise ValueError(f"{cfg.name} has experts: pass ref= to replay its routing")
        replay = ("--routing-replay", str(Path(ref) / ROUTING_FILE))
    return (
        *cfg.cand, *cfg.shared, "--precision", precision, "--seed", str(seed), *replay, *extra,
    )  # fmt: skip


def run_candidate(
    out: Path, cfg: Config, precision: str, seed: int, *extra: str, ref: Path | None = None
) -> Path:
    run_train(out, cfg.nproc, *candidate_args(cfg, precision, seed, *extra, ref=ref))
    return out


class ServingCandidate(ServingJob):
    """A zoo candidate that serves replays after its capture against `ref` (the process
    lifecycle is the end-to-end localize test's `ServingJob`)."""

    def __init__(self, workdir: Path, cfg: Config, precision: str, seed: int, ref: Path,
                 *extra: str) -> None:  # fmt: skip
        args = candidate_args(cfg, precision, seed, *extra, ref=ref)
        super().__init__(
            workdir, ref, train_command(workdir / "bundle", cfg.nproc, *args), idle_s=600
        )


@dataclass
class Verdict:
    exit_code: int
    max_ratio: float
    divergent: int
    compared: int
    first_forward: str | None
    first_backward: str | None
    # Phase and tensor kinds of the earliest iteration with a divergent tensor.
    phase: str | None = None
    kinds: set[str] = field(default_factory=set)
    introduced: list[str] = field(default_factory=list)
    located: str | None = None
    report: dict = field(default_factory=dict)
    drift: int = 0  # tensors judged drift (a cross-version pair, docs/cross-version.md)

    @property
    def detected(self) -> bool:
        return self.exit_code == 1


def diff(ref: Path, cand: Path, json_out: Path) -> Verdict:
    proc = subprocess.run(
        [str(TTRACE), "diff", str(ref), str(cand), "--json", str(json_out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ttrace diff failed ({proc.returncode}):\n{proc.stderr}")
    return read_verdict(proc.returncode, json.loads(json_out.read_text()))


def float_tensors(report: dict) -> list[dict]:
    """The report's compared floating-point tensors (integers are exact for every method)."""
    return [
        t
        for t in report["tensors"]
        if t["dtype"].startswith(("float", "bfloat")) and t.get("error") is not None
    ]


def read_verdict(code: int, rep: dict) -> Verdict:
    s, fd = rep["summary"], rep["first_divergence"]
    v = Verdict(
        code,
        float("inf") if s["max_ratio"] is None else float(s["max_ratio"]),
        s["divergent"],
        s["compared"],
        fd.get("forward"),
        fd.get("backward"),
        report=rep,
        drift=int(s.get("drift", 0)),
    )
    bad = [t for t in rep["tensors"] if t["status"] == "divergent"]
    if not bad:
        return v
    first_it = min(t["id"]["iteration"] for t in bad)
    v.kinds = {t["id"]["kind"] for t in bad if t["id"]["iteration"] == first_it}
    v.phase = (
        "forward"
        if v.kinds & FORWARD_KINDS
        else "backward"
        if v.kinds & BACKWARD_KINDS
        else "optimizer"
    )
    v.introduced = [m["name"] for m in rep["modules"] if m["origin"] == "introduced"]
    v.located = _locate(v, rep)
    return v


def _locate(v: Verdict, rep: dict) -> str | None:
    """The engine's best single answer for where the bug is: the first divergence of the
    bug's phase when the engine judges it introduced there; otherwise the deepest module of
    the first (forward) or last (backward) chain of introduced modules; otherwise the first
    divergence itself. The optimizer phase has no module order: it is named by its kinds."""
    if v.phase == "optimizer":
        # Named by the modules whose main grads / updated params diverge first: a reduction
        # bug that spares some weights (e.g. only norm weights) is located by that set.
        return "optimizer: " + ",".join(_first_divergent_modules(rep))
    first = v.first_forward if v.phase == "forward" else v.first_backward
    origin = {m["name"]: m["origin"] for m in rep["modules"]}
    if first is not None and origin.get(first) == "introduced":
        return first
    if v.introduced:
        chain = v.introduced if v.phase == "forward" else list(reversed(v.introduced))
        head = chain[0]
        deepest = head
        for name in chain[1:]:
            if name.startswith(deepest + "."):
                deepest = name
            elif not head.startswith(name + "."):
                break
        return deepest
    return first


def _first_divergent_modules(rep: dict) -> list[str]:
    bad = [t for t in rep["tensors"] if t["status"] == "divergent"]
    first_it = min(t["id"]["iteration"] for t in bad)
    names = {t["id"]["module"] for t in bad if t["id"]["iteration"] == first_it}
    order = {m["name"]: m["order"] for m in rep["modules"]}
    return sorted(names, key=lambda n: (order.get(n, 1 << 30), n))


def matches(located: str | None, pattern: str) -> bool:
    """Glob match; for `optimizer: GLOB` every module of the located set must match GLOB."""
    if located is None:
        return False
    prefix = "optimizer: "
    if pattern.startswith(prefix):
        if not located.startswith(prefix):
            return False
        names = located[len(prefix) :].split(",")
        return all(fnmatch.fnmatchcase(n, pattern[len(prefix) :]) for n in names)
    return fnmatch.fnmatchcase(located, pattern)


class Timer:
    def __enter__(self) -> Timer:
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *_: object) -> None:
        self.seconds = time.perf_counter() - self.t0
