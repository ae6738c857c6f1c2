"""Run the bug-zoo matrix: every bug of examples/gpt/bugs.py in the layout where it appears,
in each precision; print and write a markdown table of detection and localization.

    python bench/bug_matrix.py [--out DIR] [--markdown FILE] [--bugs a,b] [--precisions fp32]
                               [--reference-layout single,tp2]
                               [--candidate-args "--attention-kernel bf16x3"]
                               [--simulate-torch 2.14.0]

With several reference layouts each candidate runs once and is diffed against a reference of
each layout (a distributed reference, docs/bug-zoo.md): one row per reference, then a table
that sets their verdicts side by side and says whether they agree.

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
from dataclasses import dataclass
from pathlib import Path

from ttrace_testing.bug_specs import SPECS, BugSpec
from ttrace_testing.zoo_lib import (
    CONFIGS,
    REFERENCE_LAYOUTS,
    Timer,
    Verdict,
    diff,
    has_experts,
    matches,
    run_candidate,
    run_reference,
)

HEADER = (
    "| bug | config | precision | reference | detected | localized | max ratio "
    "| first divergence | located | drift | time (s) |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


@dataclass
class Outcome:
    """One candidate judged against one reference."""

    detected: bool
    localized: bool
    first: str  # the report's first divergence: iteration, phase, module, kind
    located: str


class References:
    """The references the matrix needs, each run once: per (model flags, precision, layout)."""

    def __init__(self, work: Path, seed: int) -> None:
        self.work, self.seed, self.made = work, seed, {}

    def get(self, spec: BugSpec, precision: str, layout: str) -> Path:
        cfg = CONFIGS[spec.config]
        key = (cfg.shared, precision, layout)
        if key not in self.made:
            # A distributed reference with experts replays the single reference's routing.
            routing = (
                self.get(spec, precision, "single")
                if has_experts(cfg) and layout != "single"
                else None
            )
            out = self.work / f"ref-{layout}-{len(self.made)}"
            self.made[key] = run_reference(
                out, cfg, precision, self.seed, layout=layout, routing_from=routing
            )
        return self.made[key]


def first_divergence(v: Verdict) -> str:
    fd = v.report.get("first_divergence") or {}
    if fd.get("module") is None:
        return "-"
    return f"it {fd.get('iteration')} {fd.get('phase')}: {fd.get('module')} {fd.get('kind')}"


def short_located(located: str | None) -> str:
    located = located or "-"
    if located.startswith("optimizer: ") and located.count(",") >= 3:
        names = located[len("optimizer: ") :].split(",")
        located = f"optimizer: {names[0]}, ... {names[-1]} ({len(names)} modules)"
    return located


def simulate_torch(bundle: Path, version: str) -> None:
    """Rewrites the candidate manifest's recorded torch version (a simulated upgrade)."""
    path = bundle / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["environment"]["versions"]["torch"] = version
    path.write_text(json.dumps(manifest, indent=2) + "\n")


@dataclass(frozen=True)
class CandidateOptions:
    """What every candidate gets beyond its bug: extra flags, a simulated torch version."""

    extra: tuple[str, ...] = ()
    torch_version: str = ""


def run_one(
    spec: BugSpec,
    precision: str,
    work: Path,
    refs: References,
    layouts: list[str],
    options: CandidateOptions = CandidateOptions(),
) -> tuple[list[str], dict[str, Outcome]]:
    """The table rows of one bug (one per reference layout) and each layout's outcome."""
    cfg = CONFIGS[spec.config]
    routing = refs.get(spec, precision, "single") if has_experts(cfg) else None
    cand = work / f"{spec.bug}-{precision}"
    with Timer() as t:
        run_candidate(
            cand, cfg, precision, refs.seed, *options.extra, "--inject", spec.bug, ref=routing
        )
        if options.torch_version:
            simulate_torch(cand, options.torch_version)
    rows, outcomes = [], {}
    for layout in layouts:
        ref = refs.get(spec, precision, layout)
        with Timer() as d:
            v = diff(ref, cand, cand.with_name(f"{cand.name}-vs-{layout}.json"))
        ok = matches(v.located, spec.where)
        outcomes[layout] = Outcome(v.detected, ok, first_divergence(v), short_located(v.located))
        rows.append(
            f"| {spec.bug} | {cfg.name} | {precision} | {layout} "
            f"| {'yes' if v.detected else 'NO'} | {'yes' if ok else 'NO'} | {v.max_ratio:.3g} "
            f"| {outcomes[layout].first} | {outcomes[layout].located} "
            f"| {v.drift} | {t.seconds + d.seconds:.0f} |"
        )
    return rows, outcomes


def comparison(layouts: list[str], results: list[tuple[str, dict[str, Outcome]]]) -> list[str]:
    """Per bug: each reference's verdict (detected, first divergence) and whether they agree."""
    head = "| bug | " + " | ".join(layouts) + " | same verdict |"
    rows = [head, "|---" * (len(layouts) + 2) + "|"]
    for name, by in results:
        cells = [
            f"{'detected' if o.detected else 'MISSED'}, {o.first}" for o in map(by.get, layouts)
        ]
        first = by[layouts[0]]
        same = all(
            (o.detected, o.localized, o.first) == (first.detected, first.localized, first.first)
            for o in by.values()
        )
        rows.append(f"| {name} | " + " | ".join(cells) + f" | {'yes' if same else 'NO'} |")
    agree = sum(
        1
        for _, by in results
        if len({(o.detected, o.localized, o.first) for o in by.values()}) == 1
    )
    rows.append("")
    for layout in layouts:
        found = sum(1 for _, by in results if by[layout].detected and by[layout].localized)
        rows.append(f"- {layout} reference: {found}/{len(results)} detected and localized")
    rows.append(f"- same verdict with every reference: {agree}/{len(results)}")
    return rows


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__)
    a.add_argument("--out", type=Path, default=None, help="keep bundles here")
    a.add_argument("--markdown", type=Path, default=Path("bug-matrix.md"))
    a.add_argument("--bugs", default="", help="comma-separated subset")
    a.add_argument("--precisions", default="", help="comma-separated subset")
    a.add_argument("--seed", type=int, default=1234)
    a.add_argument(
        "--reference-layout",
        default="single",
        help=f"comma-separated reference layouts, each diffed: {', '.join(REFERENCE_LAYOUTS)}",
    )
    a.add_argument("--candidate-args", default="", help="extra flags of every candidate")
    a.add_argument("--simulate-torch", default="", help="candidates' recorded torch version")
    args = a.parse_args(argv)
    options = CandidateOptions(tuple(shlex.split(args.candidate_args)), args.simulate_torch)
    only = set(filter(None, args.bugs.split(",")))
    precs = set(filter(None, args.precisions.split(",")))
    layouts = [x for x in args.reference_layout.split(",") if x]
    if not layouts or any(x not in REFERENCE_LAYOUTS for x in layouts):
        a.error(f"--reference-layout: choose among {', '.join(REFERENCE_LAYOUTS)}")
    work = args.out or Path(tempfile.mkdtemp(prefix="bug-matrix-"))
    work.mkdir(parents=True, exist_ok=True)
    refs = References(work, args.seed)
    rows = [HEADER]
    misses, results = [], []
    print(HEADER, flush=True)
    for spec in SPECS:
        if only and spec.bug not in only:
            continue
        for p in spec.precisions:
            if precs and p not in precs:
                continue
            try:
                got, by = run_one(spec, p, work, refs, layouts, options)
                results.append((f"{spec.bug} ({spec.config}, {p})", by))
                misses += [
                    f"{spec.bug} ({p}, {x} reference)"
                    for x, o in by.items()
                    if not (o.detected and o.localized)
                ]
            except RuntimeError as e:
                got = [
                    f"| {spec.bug} | {spec.config} | {p} | | error | | | {str(e)[-200:]!r} | | | |"
                ]
                misses.append(f"{spec.bug} ({p})")
            rows += got
            print("\n".join(got), flush=True)
    if len(layouts) > 1:
        rows += ["", *comparison(layouts, results)]
        print("\n".join(rows[-len(results) - len(layouts) - 4 :]), flush=True)
    args.markdown.write_text("\n".join(rows) + "\n")
    if misses:  # a sweep that cannot fail proves nothing
        print(f"missed (not detected or not localized): {', '.join(misses)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
