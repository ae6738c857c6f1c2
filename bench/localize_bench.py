"""Localize timings on the demo's configuration: a 4-rank TP2xDP2 candidate of the example
GPT (torchrun, gloo) serving replays, and `ttrace localize` against it.

Reports (1) the time per replayed module, client side (request to judgement, with the
reference's nominal and 2 perturbed inputs) and agent side, for the forward and the backward
replay of every module; (2) the time to localize the demo's whole divergence (diff + walk) and
the walk alone. Targets: under 2 s per module, under 30 s for the demo.

Usage: .venv/bin/python bench/localize_bench.py [--bug NAME] [--layers N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ttrace_testing import serving_candidate as e2e  # the end-to-end localize test's candidate
from ttrace_testing.paths import REPO


def timed(cmd: list[str]) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Runs a command; returns it with its wall time and its CPU time (user + system): on a
    shared machine the wall time includes waiting for a core, the CPU time does not."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done, wall, cpu


def localize(
    ttrace: Path,
    reference: Path,
    job: e2e.ServingCandidate,
    address: str,
    report: Path,
    *extra: str,
) -> tuple[float, float, dict]:
    cmd = e2e.localize_command(ttrace, reference, job, address, report, *extra)
    done, wall, cpu = timed(cmd)
    if done.returncode == 2:
        raise RuntimeError(done.stdout + done.stderr)
    return wall, cpu, json.loads(report.read_text())


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "max": max(values),
    }


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--bug", default="sp-norm-grad-not-reduced")  # the demo's
    a.add_argument("--layers", default="4")  # the demo's model
    a.add_argument("--ttrace", default=str(REPO / "build" / "bin" / "ttrace"))
    a.add_argument("--json", help="write the numbers here")
    args = a.parse_args()
    e2e.SMALL[:] = ["--layers", args.layers]
    ttrace = Path(args.ttrace)
    with tempfile.TemporaryDirectory(prefix="ttrace-localize-bench-") as tmp:
        work = Path(tmp)
        reference = work / "reference"
        e2e.make_reference(reference)
        with e2e.ServingCandidate(work / "candidate", reference, [args.bug]) as job:
            address = job.wait_serving()
            modules = [
                m["name"] for m in json.loads((job.bundle / "manifest.json").read_text())["modules"]
            ]
            # As in the demo: `ttrace diff` first (it leaves the summary cache), then localize.
            _, diff_wall, diff_cpu = timed(
                [str(ttrace), "diff", str(reference), str(job.bundle), "-q"]
            )
            walk_wall, walk_cpu, walk = localize(
                ttrace, reference, job, address, work / "walk.json"
            )
            cold_wall, cold_cpu, _ = localize(
                ttrace, reference, job, address, work / "cold.json", "--no-cache"
            )
            per_module: dict[str, list[dict]] = {}
            for phase in ("forward", "backward"):
                names = [x for m in modules for x in ("--module", m)]
                _, _, named = localize(
                    ttrace,
                    reference,
                    job,
                    address,
                    work / f"{phase}.json",
                    *names,
                    "--phase",
                    phase,
                )
                per_module[phase] = named["verdicts"]
            subprocess.run(
                [
                    str(ttrace),
                    "localize",
                    str(reference),
                    str(job.bundle),
                    "--agent",
                    address,
                    "--token-file",
                    str(job.token),
                    "--module",
                    modules[0],
                    "--shutdown",
                ],
                capture_output=True,
                timeout=120,
            )
    result = {
        "bug": args.bug,
        "layers": int(args.layers),
        "demo": {
            "diff_wall_s": diff_wall,
            "diff_cpu_s": diff_cpu,
            "localize_wall_s": walk_wall,
            "localize_cpu_s": walk_cpu,
            "localize_no_cache_wall_s": cold_wall,
            "localize_no_cache_cpu_s": cold_cpu,
            "walk_s": walk["seconds"],
            "replays": len(walk["verdicts"]),
            "conclusion": walk["conclusion"],
        },
        "per_module": {
            phase: {
                "client_s": summary([v["seconds"] for v in vs if v["verdict"] != "not replayable"]),
                "agent_s": summary(
                    [v["agent_seconds"] for v in vs if v["verdict"] != "not replayable"]
                ),
                "not_replayable": [v["module"] for v in vs if v["verdict"] == "not replayable"],
                "slowest": max(vs, key=lambda v: v["seconds"])["module"],
            }
            for phase, vs in per_module.items()
        },
    }
    print(json.dumps(result, indent=2))
    for phase, s in result["per_module"].items():
        c = s["client_s"]
        print(
            f"{phase:8s} per module: mean {c['mean']:.2f} s, max {c['max']:.2f} s "
            f"({s['slowest']}) over {c['n']} modules (target < 2 s)"
        )
    d = result["demo"]
    print(
        f"demo: diff {d['diff_wall_s']:.1f} s wall ({d['diff_cpu_s']:.1f} s CPU), then localize "
        f"{d['localize_wall_s']:.1f} s wall ({d['localize_cpu_s']:.1f} s CPU; walk "
        f"{d['walk_s']:.1f} s, {d['replays']} replays; target < 30 s); without the diff's "
        f"cache {d['localize_no_cache_wall_s']:.1f} s wall ({d['localize_no_cache_cpu_s']:.1f} s "
        f"CPU): {d['conclusion']}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
