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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "localize"))
import localize_e2e as e2e  # noqa: E402  (the serving-candidate helper of the end-to-end test)


def localize(
    ttrace: Path,
    reference: Path,
    job: e2e.ServingCandidate,
    address: str,
    report: Path,
    *extra: str,
) -> tuple[int, float, dict]:
    cmd = [
        str(ttrace),
        "localize",
        str(reference),
        str(job.bundle),
        "--agent",
        address,
        "--token-file",
        str(job.token),
        "--json",
        str(report),
        "--no-cache",
        *extra,
    ]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    if done.returncode == 2:
        raise RuntimeError(done.stdout + done.stderr)
    return done.returncode, wall, json.loads(report.read_text())


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "max": max(values),
    }


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--bug", default="vocab-embedding-off-by-one")
    a.add_argument("--layers", default="2")
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
            _, walk_wall, walk = localize(ttrace, reference, job, address, work / "walk.json")
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
            "wall_s": walk_wall,
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
        f"demo: localize {d['wall_s']:.1f} s wall (walk {d['walk_s']:.1f} s, "
        f"{d['replays']} replays; target < 30 s): {d['conclusion']}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
