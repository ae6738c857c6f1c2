"""Verdicts on the bug zoo over several seeds: is the guilty module always "introduced", how many
other modules are, what shape does the first divergence's error have, and does the bug-class
hint name the right class?

    python bench/verdict_sweep.py --out DIR [--seeds 1,2,3,4] [--precisions fp32,bf16]
        [--markdown FILE]

Bundles are kept under DIR and reused: a second run only re-diffs them (with the current
`ttrace`), so the verdict rules can change without re-running the models.

Counting: a case's *guilty* modules are those its spec's `where` glob names
(python/ttrace_testing/bug_specs.py; for `optimizer: GLOB`, every module matching GLOB); ancestors
of a guilty module contain the bug and are not counted as others. *Extra* = introduced modules that
are neither; it is "n/a" for bugs of the gradient reduction or the optimizer step, which reach every
module they touch at once, and those are judged by their *guilty phase*: the phase of the report's
first divergence must be the spec's. The sweep exits 1 on any miss.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from ttrace_testing.bug_specs import SPECS, BugSpec
from ttrace_testing.verdicts import judge, verdict_holds
from ttrace_testing.zoo_lib import CONFIGS, TTRACE, run_candidate, run_reference


def _reference(out: Path, spec: BugSpec, precision: str, seed: int) -> Path:
    cfg = CONFIGS[spec.config]
    key = "-".join(cfg.shared).replace("--", "") or "plain"
    ref = out / f"ref-{key}-{precision}-s{seed}"
    if not (ref / "manifest.json").exists():
        run_reference(ref, cfg, precision, seed)
    return ref


def _candidate(out: Path, ref: Path, spec: BugSpec, precision: str, seed: int) -> Path:
    cand = out / f"{spec.bug}-{precision}-s{seed}"
    if not (cand / "manifest.json").exists():
        run_candidate(cand, CONFIGS[spec.config], precision, seed, "--inject", spec.bug, ref=ref)
    return cand


def diff(ref: Path, cand: Path) -> tuple[int, dict]:
    out = cand.with_suffix(".json")
    proc = subprocess.run(
        [str(TTRACE), "diff", "--no-cache", str(ref), str(cand), "--json", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode not in (0, 1, 2) or not out.exists():
        raise RuntimeError(f"ttrace diff failed ({proc.returncode}):\n{proc.stderr}")
    return proc.returncode, json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--out", type=Path, required=True)
    a.add_argument("--seeds", default="1,2,3,4")
    a.add_argument("--precisions", default="fp32,bf16")
    a.add_argument("--markdown", type=Path, default=None)
    a.add_argument(
        "--diff-only", action="store_true", help="only re-diff the bundles already under --out"
    )
    args = a.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    precs = args.precisions.split(",")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    # Seed-major: a sweep cut short still covers every bug in both precisions.
    cases = [
        (seed, spec, p)
        for seed in seeds
        for spec in SPECS
        for p in spec.precisions
        if (p in precs and p != "fp8") or (p == "fp8" and seed == seeds[0])
    ]
    for seed, spec, p in cases:
        done = (args.out / f"{spec.bug}-{p}-s{seed}" / "manifest.json").exists()
        if args.diff_only and not done:
            continue
        try:
            ref = _reference(args.out, spec, p, seed)
            cand = _candidate(args.out, ref, spec, p, seed)
            code, rep = diff(ref, cand)
            r = judge(spec, rep, code)
        except RuntimeError as e:
            r = {"error": str(e)[-300:]}
        r.update(bug=spec.bug, precision=p, seed=seed)
        rows.append(r)
        print(json.dumps(r), flush=True)
    table = summarize(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    misses = [r for r in rows if not verdict_holds(r)]
    for r in misses:  # a sweep that cannot fail proves nothing
        print(f"miss: {r['bug']} {r['precision']} seed {r['seed']}: {r}", file=sys.stderr)
    return 1 if misses else 0


def summarize(rows: list[dict]) -> str:
    lines = [
        "| bug | precision | runs | exit codes | guilty phase | guilty introduced "
        "| max extra introduced | first divergence (seed 1) | error shape (seed 1) | hint right |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["bug"], r["precision"]), []).append(r)
    for (bug, prec), rs in groups.items():
        ok = [r for r in rs if "error" not in r]
        codes = ",".join(str(r["exit"]) for r in ok) + (" +errors" if len(ok) < len(rs) else "")
        guilty = sum(r["guilty_introduced"] for r in ok)
        phase = sum(r["guilty_phase"] for r in ok)
        shown = [len(r["extra"]) for r in ok if r["extra"] is not None]
        extra = max(shown) if shown else "n/a"
        s1 = ok[0] if ok else {}
        hint = sum(r["hint"] == bug for r in ok)
        lines.append(
            f"| {bug} | {prec} | {len(rs)} | {codes} | {phase}/{len(ok)} | {guilty}/{len(ok)} "
            f"| {extra} "
            f"| {s1.get('first') or '-'} | {'; '.join(s1.get('shape', [])) or '-'} "
            f"| {hint}/{len(ok)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
