"""The analytic bound against the empirical one, side by side: every layout of the false-alarm
sweep judged correct (no injected bug) and every bug of the zoo, each candidate diffed twice,
against a reference captured with perturbed variants (`--perturbations 2`: empirical bound)
and against one captured without (`--perturbations 0`: analytic bound only). Prints the
divergent counts of the correct runs (false alarms) and whether each bug is caught, per phase.

    python bench/analytic_bound.py [--configs TP2,DP2] [--bugs a,b] [--precisions fp32]
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
from pathlib import Path

from ttrace_testing.bug_specs import SPECS
from ttrace_testing.zoo_lib import CONFIGS, Config, Verdict, diff, run_candidate, run_reference

LAYOUTS = [
    "TP2", "DP2", "TP2xDP2", "CP2", "DP2+dist-opt", "TP2xPP2", "TP2xCP2", "PP2", "EP2",
    "TP2+clip", "TP2+MoE", "PP2+tied",
]  # fmt: skip
VARIANTS = {"variants": 2, "analytic": 0}


class References:
    """One reference per (model flags, precision, seed, variant count), captured on first use."""

    def __init__(self, work: Path, seed: int, reuse: bool) -> None:
        self.work, self.seed, self.reuse, self.refs = work, seed, reuse, {}

    def get(self, cfg: Config, precision: str, variants: int) -> Path:
        key = (cfg.shared, precision, variants)
        if key not in self.refs:
            out = self.work / f"ref-{len(self.refs)}-p{variants}"
            if not (self.reuse and (out / "manifest.json").is_file()):
                run_reference(out, cfg, precision, self.seed, variants)
            self.refs[key] = out
        return self.refs[key]

    def candidate(self, out: Path, cfg: Config, precision: str, ref: Path, *extra: str) -> Path:
        if not (self.reuse and (out / "manifest.json").is_file()):
            run_candidate(out, cfg, precision, self.seed, *extra, ref=ref)
        return out


def judge_pair(refs: References, cfg: Config, precision: str, cand: Path) -> dict[str, Verdict]:
    """The candidate diffed against the reference with variants and the one without."""
    return {
        name: diff(refs.get(cfg, precision, n), cand, cand.with_name(f"{cand.name}-{name}.json"))
        for name, n in VARIANTS.items()
    }


def provisional(v: Verdict) -> str:
    s = v.report["summary"]
    return f"{s.get('provisional', 0)}/{s.get('provisional_divergent', 0)}"


def correct_row(refs: References, name: str, precision: str, work: Path) -> str:
    cfg = CONFIGS[name]
    ref = refs.get(cfg, precision, VARIANTS["variants"])
    cand = refs.candidate(work / f"ok-{name}-{precision}", cfg, precision, ref)
    v = judge_pair(refs, cfg, precision, cand)
    e, a = v["variants"], v["analytic"]
    return (
        f"| {name} | {precision} | {e.compared} | {e.divergent} | {e.max_ratio:.3g} "
        f"| {a.divergent} | {a.max_ratio:.3g} | {provisional(a)} | {a.exit_code} |"
    )


def bug_row(refs: References, bug: str, precision: str, work: Path) -> str:
    spec = next(s for s in SPECS if s.bug == bug)
    cfg = CONFIGS[spec.config]
    ref = refs.get(cfg, precision, VARIANTS["variants"])
    cand = refs.candidate(work / f"bug-{bug}-{precision}", cfg, precision, ref, "--inject", bug)
    v = judge_pair(refs, cfg, precision, cand)

    def cell(x: Verdict) -> str:
        phase = x.report["first_divergence"].get("phase") or "-"
        right = "right" if phase == spec.phase else "WRONG"
        return f"{'caught' if x.detected else 'MISSED'} (exit {x.exit_code}) | {phase} {right}"

    head = f"| {bug} | {spec.config} | {precision} | {spec.phase}"
    return f"{head} | {cell(v['variants'])} | {cell(v['analytic'])} |"


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--configs", default=",".join(LAYOUTS))
    a.add_argument("--bugs", default=",".join(s.bug for s in SPECS))
    a.add_argument("--precisions", default="fp32")
    a.add_argument("--seed", type=int, default=1234)
    a.add_argument("--out", type=Path, default=None, help="keep bundles here")
    a.add_argument("--markdown", type=Path, default=Path("analytic-bound.md"))
    a.add_argument(
        "--reuse", action="store_true", help="judge bundles already under --out again (no capture)"
    )
    a.add_argument("--layers", type=int, default=0, help="model depth (default: zoo_lib's 2)")
    args = a.parse_args(argv)
    if args.layers:  # the last --layers wins, so this overrides zoo_lib's small default
        depth = ("--layers", str(args.layers))
        for name, cfg in list(CONFIGS.items()):
            CONFIGS[name] = dataclasses.replace(cfg, shared=(*cfg.shared, *depth))
    work = args.out or Path(tempfile.mkdtemp(prefix="analytic-bound-"))
    work.mkdir(parents=True, exist_ok=True)
    refs = References(work, args.seed, args.reuse)
    precisions = args.precisions.split(",")
    lines = [
        "| layout | precision | compared | divergent (variants) | max ratio (variants) "
        "| divergent (analytic) | max ratio (analytic) | provisional / over bound "
        "| exit (analytic) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    false_alarms = 0
    for name in filter(None, args.configs.split(",")):
        for p in precisions:
            row = correct_row(refs, name, p, work)
            false_alarms += int(row.split("|")[6])
            lines.append(row)
            print(row, flush=True)
    head = [
        "",
        "| bug | layout | precision | phase | with variants | first divergence "
        "| analytic only | first divergence |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += head
    print("\n".join(head), flush=True)
    for bug in filter(None, args.bugs.split(",")):
        spec = next(s for s in SPECS if s.bug == bug)
        for p in precisions:
            if p not in spec.precisions:
                continue
            row = bug_row(refs, bug, p, work)
            lines.append(row)
            print(row, flush=True)
    args.markdown.write_text("\n".join(lines) + "\n")
    return 1 if false_alarms else 0


if __name__ == "__main__":
    raise SystemExit(main())
