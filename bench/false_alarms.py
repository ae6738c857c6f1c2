"""False-alarm sweep: correct candidates (no injected bug) in every parallel layout, in FP32,
BF16 and FP8, over N seeds, must be judged clean by `ttrace diff`. Reports, per layout and
precision, the flagged tensor count and the largest ratio seen (1 / margin).

    python bench/false_alarms.py [--seeds 10] [--configs TP2,CP2] [--precisions fp32]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.zoo_lib import CONFIGS, Timer, diff, run_candidate, run_reference

LAYOUTS = ["TP2", "TP2xPP2", "TP2xDP2", "CP2", "DP2+dist-opt", "EP2", "TP2xCP2"]
PRECISIONS = ["fp32", "bf16", "fp8"]


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--seeds", type=int, default=10)
    a.add_argument("--first-seed", type=int, default=1)
    a.add_argument("--configs", default=",".join(LAYOUTS))
    a.add_argument("--precisions", default=",".join(PRECISIONS))
    a.add_argument("--out", type=Path, default=None, help="keep bundles here")
    a.add_argument("--markdown", type=Path, default=Path("false-alarms.md"))
    args = a.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="false-alarms-"))
    work.mkdir(parents=True, exist_ok=True)
    configs = [CONFIGS[c] for c in args.configs.split(",")]
    precisions = args.precisions.split(",")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    header = (
        "| config | precision | seeds | flagged tensors | compared | max ratio | worst tensor "
        "| time (s) |\n|---|---|---|---|---|---|---|---|"
    )
    rows = [header]
    print(header, flush=True)
    alarms = 0
    refs: dict[tuple, Path] = {}
    for cfg in configs:
        for p in precisions:
            flagged = compared = 0
            worst, worst_label = 0.0, ""
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
            alarms += flagged
            row = (
                f"| {cfg.name} | {p} | {len(seeds)} | {flagged} | {compared} | {worst:.3g} "
                f"| {worst_label} | {t.seconds:.0f} |"
            )
            rows.append(row)
            print(row, flush=True)
    args.markdown.write_text("\n".join(rows) + "\n")
    return 1 if alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
