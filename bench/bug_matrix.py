"""Run the bug-zoo matrix: every bug of examples/gpt/bugs.py in the layout where it appears,
in each precision; print and write a markdown table of detection and localization.

    python bench/bug_matrix.py [--out DIR] [--markdown FILE] [--bugs a,b] [--precisions fp32]
        [--candidate-args "--attention-kernel bf16x3"] [--simulate-torch 2.14.0]

A cross-version pair (docs/cross-version.md): `--candidate-args` gives every candidate other
flags than its reference (another attention kernel), `--simulate-torch` rewrites each
candidate manifest's recorded torch version, as a run under another torch would record it,
so drift is allowed at every module: the zoo's bugs must still be caught.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bug_specs import SPECS, BugSpec
from bench.zoo_lib import CONFIGS, Timer, diff, matches, run_candidate, run_reference

HEADER = (
    "| bug | config | precision | detected | localized | max ratio | first divergence "
    "| located | drift | time (s) |\n|---|---|---|---|---|---|---|---|---|---|"
)


def simulate_torch(bundle: Path, version: str) -> None:
    """Rewrites the candidate manifest's recorded torch version (a simulated upgrade)."""
    path = bundle / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["environment"]["versions"]["torch"] = version
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def run_one(
    spec: BugSpec, precision: str, work: Path, refs: dict, seed: int,
    extra: tuple[str, ...] = (), torch_version: str = "",
) -> tuple[str, bool]:  # fmt: skip
    """The table row of one bug, and whether it was both detected and localized."""
    cfg = CONFIGS[spec.config]
    key = (cfg.shared, precision)
    if key not in refs:
        refs[key] = run_reference(work / f"ref-{len(refs)}", cfg, precision, seed)
    cand = work / f"{spec.bug}-{precision}"
    with Timer() as t:
        run_candidate(cand, cfg, precision, seed, *extra, "--inject", spec.bug, ref=refs[key])
        if torch_version:
            simulate_torch(cand, torch_version)
        v = diff(refs[key], cand, cand.with_suffix(".json"))
    first = f"fwd {v.first_forward or '-'} / bwd {v.first_backward or '-'} ({v.phase})"
    ok = matches(v.located, spec.where)
    located = v.located or "-"
    if located.startswith("optimizer: ") and located.count(",") >= 3:
        names = located[len("optimizer: ") :].split(",")
        located = f"optimizer: {names[0]}, ... {names[-1]} ({len(names)} modules)"
    row = (
        f"| {spec.bug} | {cfg.name} | {precision} | {'yes' if v.detected else 'NO'} "
        f"| {'yes' if ok else 'NO'} | {v.max_ratio:.3g} | {first} | {located} "
        f"| {v.drift} | {t.seconds:.0f} |"
    )
    return row, v.detected and ok


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--out", type=Path, default=None, help="keep bundles here")
    a.add_argument("--markdown", type=Path, default=Path("bug-matrix.md"))
    a.add_argument("--bugs", default="", help="comma-separated subset")
    a.add_argument("--precisions", default="", help="comma-separated subset")
    a.add_argument("--seed", type=int, default=1234)
    a.add_argument("--candidate-args", default="", help="extra flags of every candidate")
    a.add_argument("--simulate-torch", default="", help="candidates' recorded torch version")
    args = a.parse_args(argv)
    extra = tuple(shlex.split(args.candidate_args))
    only = set(filter(None, args.bugs.split(",")))
    precs = set(filter(None, args.precisions.split(",")))
    work = args.out or Path(tempfile.mkdtemp(prefix="bug-matrix-"))
    work.mkdir(parents=True, exist_ok=True)
    refs: dict = {}
    rows = [HEADER]
    misses = []
    print(HEADER, flush=True)
    for spec in SPECS:
        if only and spec.bug not in only:
            continue
        for p in spec.precisions:
            if precs and p not in precs:
                continue
            try:
                row, ok = run_one(spec, p, work, refs, args.seed, extra, args.simulate_torch)
            except RuntimeError as e:
                row, ok = (
                    f"| {spec.bug} | {spec.config} | {p} | error | | | {str(e)[-200:]!r} | | | |",
                    False,
                )
            if not ok:
                misses.append(f"{spec.bug} ({p})")
            rows.append(row)
            print(row, flush=True)
    args.markdown.write_text("\n".join(rows) + "\n")
    if misses:  # a sweep that cannot fail proves nothing
        print(f"missed (not detected or not localized): {', '.join(misses)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
