"""False-alarm sweep: correct candidates (no injected bug) in every parallel layout, in FP32,
BF16 and FP8, over N seeds, must be judged clean by `ttrace diff`. Reports, per layout and
precision, the flagged tensor count and the largest ratio seen (1 / margin).

With `--baselines` the same clean runs are also judged by the naive checks of
python/ttrace_testing/naive_checks.py (assert_close, cosine >= 0.99, the fixed upstream bound):
every tensor they flag on a correct run is a false alarm, which is what their detection power in
docs/detection.md has to be weighed against. `--json` writes the totals per precision, with
the largest relative error and the smallest cosine seen on any clean tensor: the tightest
fixed thresholds that would have stayed silent on this sweep.

    python bench/false_alarms.py [--seeds 10] [--configs TP2,CP2] [--precisions fp32]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
from pathlib import Path

from ttrace_testing.naive_checks import METHODS, naive_flags
from ttrace_testing.zoo_lib import (
    CONFIGS,
    Timer,
    Verdict,
    diff,
    float_tensors,
    run_candidate,
    run_reference,
)

LAYOUTS = ["TP2", "TP2xPP2", "TP2xDP2", "CP2", "DP2+dist-opt", "EP2", "TP2xCP2"]
PRECISIONS = ["fp32", "bf16", "fp8"]


class Totals:
    """One precision's totals over every layout and seed of the sweep."""

    def __init__(self) -> None:
        self.runs = 0
        self.flags = {m: [0, 0] for m in ("ttrace", *METHODS)}  # tensors, runs with a flag
        self.max_ratio = 0.0
        self.max_error = (0.0, "")
        self.min_cosine = (1.0, "")

    def add(self, where: str, v: Verdict, naive: dict[str, list[str]] | None) -> None:
        self.runs += 1
        counts = {"ttrace": v.divergent, **{m: len(f) for m, f in (naive or {}).items()}}
        for m, n in counts.items():
            self.flags[m][0] += n
            self.flags[m][1] += n > 0
        self.max_ratio = max(self.max_ratio, v.max_ratio)
        for t in float_tensors(v.report):
            if t["error"] > self.max_error[0]:
                self.max_error = (t["error"], f"{where}: {t['label']}")
            cos = t["metrics"].get("cosine")
            if cos is not None and cos < self.min_cosine[0]:
                self.min_cosine = (cos, f"{where}: {t['label']}")

    def to_json(self, baselines: bool) -> dict:
        methods = self.flags if baselines else {"ttrace": self.flags["ttrace"]}
        return {
            "runs": self.runs,
            "flags": {m: {"tensors": n, "runs": r} for m, (n, r) in methods.items()},
            "max_ratio": self.max_ratio,
            "max_rel_error": {"value": self.max_error[0], "tensor": self.max_error[1]},
            "min_cosine": {"value": self.min_cosine[0], "tensor": self.min_cosine[1]},
        }


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--seeds", type=int, default=10)
    a.add_argument("--first-seed", type=int, default=1)
    a.add_argument("--configs", default=",".join(LAYOUTS))
    a.add_argument("--precisions", default=",".join(PRECISIONS))
    a.add_argument("--out", type=Path, default=None, help="keep bundles here")
    a.add_argument("--markdown", type=Path, default=Path("false-alarms.md"))
    a.add_argument(
        "--baselines", action="store_true", help="also count the naive checks' false alarms"
    )
    a.add_argument("--json", type=Path, default=None, help="totals per precision (JSON)")
    a.add_argument("--layers", type=int, default=0, help="model depth (default: zoo_lib's 2)")
    args = a.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="false-alarms-"))
    work.mkdir(parents=True, exist_ok=True)
    configs = [CONFIGS[c] for c in args.configs.split(",")]
    if args.layers:  # the last --layers wins, so this overrides zoo_lib's small default
        depth = ("--layers", str(args.layers))
        configs = [dataclasses.replace(c, shared=(*c.shared, *depth)) for c in configs]
    precisions = args.precisions.split(",")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    cols = ["config", "precision", "seeds", "flagged tensors", "compared", "max ratio"]
    cols += ["worst tensor", "time (s)"]
    if args.baselines:
        cols += [f"{m}: flagged tensors (runs)" for m in METHODS] + ["fixed bound: first flag"]
    header = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols)
    rows = [header]
    print(header, flush=True)
    alarms = 0
    refs: dict[tuple, Path] = {}
    totals = {p: Totals() for p in precisions}
    for cfg in configs:
        for p in precisions:
            flagged = compared = 0
            worst, worst_label = 0.0, ""
            naive = {m: [0, 0] for m in METHODS}  # flagged tensors, runs with a flag
            first_fixed = ""
            with Timer() as t:
                for s in seeds:
                    key = (cfg.shared, p, s)
                    if key not in refs:
                        refs[key] = run_reference(work / f"ref-{len(refs)}", cfg, p, s)
                    cand = work / f"{cfg.name}-{p}-{s}"
                    run_candidate(cand, cfg, p, s, ref=refs[key])
                    v = diff(refs[key], cand, cand.with_suffix(".json"))
                    flagged += v.divergent
                    compared += v.compared
                    if v.max_ratio > worst:
                        worst = v.max_ratio
                        top = max(v.report["tensors"], key=lambda x: x["ratio"] or 0.0)
                        worst_label = f"seed {s}: {top['label']}"
                    found = naive_flags(refs[key], cand, p) if args.baselines else None
                    totals[p].add(f"{cfg.name} seed {s}", v, found)
                    if found:
                        for m, labels in found.items():
                            naive[m][0] += len(labels)
                            naive[m][1] += bool(labels)
                            if m == "fixed bound" and labels and not first_fixed:
                                first_fixed = f"seed {s}: {labels[0]}"
            alarms += flagged
            row = (
                f"| {cfg.name} | {p} | {len(seeds)} | {flagged} | {compared} | {worst:.3g} "
                f"| {worst_label} | {t.seconds:.0f} |"
            )
            if args.baselines:
                row += "".join(f" {n} ({r}) |" for n, r in naive.values())
                row += f" {first_fixed or '-'} |"
            rows.append(row)
            print(row, flush=True)
    args.markdown.write_text("\n".join(rows) + "\n")
    if args.json:
        summary = {
            "seeds": list(seeds),
            "configs": [c.name for c in configs],
            "precisions": {p: t.to_json(args.baselines) for p, t in totals.items()},
        }
        args.json.write_text(json.dumps(summary, indent=2) + "\n")
    return 1 if alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
