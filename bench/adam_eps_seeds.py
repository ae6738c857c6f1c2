"""AdamW near its eps: false alarms and detection power of the optimizer-step conditioning.

The torchtitan-style Llama of python/tests/frameworks/titan_llama.py (TP2, AdamW,
`seeded_init`, 2 steps) against its single-process reference with two whole-run perturbed
variants, over seeds and AdamW eps values. Every candidate is compared twice by the real
`ttrace diff`: with the optimizer-step conditioning (docs/tolerance.md, "Optimizer-step
conditioning") and without it (TTRACE_NO_OPTIMIZER_CONDITIONING=1). Per run: flagged
(divergent) tensors, the worst ratio overall and among optimizer-step tensors, and for
bug runs whether the bug is still detected.

Bugs (`--bugs`): `tp` scales one TP rank's row-parallel partial of layers.0's w2 by 1+1e-3;
`lr` steps the last rank with a 1% larger learning rate.

    python bench/adam_eps_seeds.py [--seeds 0-9] [--eps 1e-8,1e-6] [--bugs tp,lr]
        [--bug-seeds 0,1,2] [--json FILE] [--markdown FILE] [--work DIR [--train-only]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TTRACE = (  # the CLI under test: CTest's TTRACE_BIN_DIR first, as python/ttrace_testing/zoo_lib.py
    Path(os.environ["TTRACE_BIN_DIR"]) / "ttrace"
    if os.environ.get("TTRACE_BIN_DIR")
    else Path(os.environ.get("TTRACE_BIN", REPO / "build" / "bin" / "ttrace"))
)
STATE_KINDS = {"param_after_step", "optimizer_state", "parameter"}


def seeds_of(text: str) -> list[int]:
    if text in ("", "none"):
        return []
    if "-" in text:
        lo, hi = text.split("-")
        return list(range(int(lo), int(hi) + 1))
    return [int(s) for s in text.split(",") if s]


def train(out: Path, nproc: int, seed: int, eps: float, bug: str = "none") -> Path:
    if (out / "manifest.json").exists():  # kept from an earlier sweep (--work)
        return out
    shutil.rmtree(out, ignore_errors=True)  # an interrupted run's leftovers
    target = ["-m", "tests.frameworks.titan_llama", "--out", str(out), "--seed", str(seed)]
    target += ["--eps", repr(eps), "--bug", bug]
    if nproc > 1:
        target += ["--tp", str(nproc)]
        launcher = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        cmd = ["nice", sys.executable, *launcher, *target]
    else:
        cmd = ["nice", sys.executable, *target]
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"), OMP_NUM_THREADS="1")
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.run(cmd, cwd=REPO / "python", env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
    return out


def diff(ref: Path, cand: Path, conditioning: bool) -> dict:
    env = dict(os.environ)
    env.pop("TTRACE_NO_OPTIMIZER_CONDITIONING", None)
    if not conditioning:
        env["TTRACE_NO_OPTIMIZER_CONDITIONING"] = "1"
    report = cand.parent / f"{cand.name}-{int(conditioning)}.json"
    cmd = ["nice", str(TTRACE), "diff", "--no-cache", "--json", str(report), str(ref), str(cand)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ttrace diff failed ({proc.returncode}):\n{proc.stderr}")
    rep = json.loads(report.read_text())
    flagged = [t for t in rep["tensors"] if t["status"] == "divergent"]
    state = [t for t in rep["tensors"] if t["id"]["kind"] in STATE_KINDS]
    worst = max(state, key=lambda t: t["ratio"] or 0.0, default=None)
    return {
        "exit": proc.returncode,
        "divergent": len(flagged),
        "invalid": rep["summary"]["invalid"],
        "max_ratio": rep["summary"]["max_ratio"],
        "state_max_ratio": worst["ratio"] if worst else None,
        "state_worst": worst["label"] if worst else None,
        "ill_conditioned": sum(t.get("ill_conditioned_elements", 0) for t in state),
        "flagged": [(t["label"], t["ratio"]) for t in flagged[:12]],
        "top_elements": worst.get("top_elements", []) if worst else [],
    }


def measure(work: Path, seed: int, eps: float, bugs: list[str], compare: bool) -> list[dict]:
    tag = f"s{seed}-e{eps:g}"
    ref = train(work / f"ref-{tag}", 1, seed, eps)
    rows = []
    for bug in ["none", *bugs]:
        cand = train(work / f"cand-{tag}-{bug}", 2, seed, eps, bug)
        for conditioning in (False, True) if compare else ():
            row = {"seed": seed, "eps": eps, "bug": bug, "conditioning": conditioning}
            row.update(diff(ref, cand, conditioning))
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def markdown(rows: list[dict]) -> str:
    lines = [
        "| eps | bug | conditioning | runs | runs flagged | flagged tensors | max ratio "
        "| worst state ratio |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["eps"], r["bug"], r["conditioning"]), []).append(r)
    for (eps, bug, cond), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        lines.append(
            f"| {eps:g} | {bug} | {'on' if cond else 'off'} | {len(rs)} "
            f"| {sum(r['exit'] == 1 for r in rs)} | {sum(r['divergent'] for r in rs)} "
            f"| {max(r['max_ratio'] for r in rs):.3g} "
            f"| {max(r['state_max_ratio'] or 0.0 for r in rs):.3g} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="0-9")
    p.add_argument("--eps", default="1e-8,1e-6")
    p.add_argument("--bugs", default="tp,lr")
    p.add_argument("--bug-seeds", default="0,1,2")
    p.add_argument("--json", type=Path)
    p.add_argument("--markdown", type=Path)
    p.add_argument("--work", type=Path, help="keep the bundles here (default: a temporary dir)")
    p.add_argument("--train-only", action="store_true", help="write the bundles, compare nothing")
    args = p.parse_args()
    bug_seeds = set(seeds_of(args.bug_seeds))
    bugs = [b for b in args.bugs.split(",") if b]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for eps in (float(e) for e in args.eps.split(",")):
            for seed in seeds_of(args.seeds):
                rows += measure(
                    work, seed, eps, bugs if seed in bug_seeds else [], not args.train_only
                )
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=1))
    table = markdown(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)


if __name__ == "__main__":
    main()
