"""`ttrace localize` on the bug zoo: for each bug (and each correct layout), in each precision,
capture the reference, start the candidate job serving replays (TTRACE_SERVE=1,
docs/localize.md), run the real `ttrace localize` CLI against its socket and check the
answer:

- a bug in a module's code: that module (its `where` glob, python/ttrace_testing/bug_specs.py) and
  no other is introduced (its ancestors contain it and are not counted as others);
- a bug in gradient reduction or the optimizer step: no module introduced, the spec's phase
  named (`gradient reduction` or `optimizer step`, python/ttrace_testing/bug_specs.py `phase`) with
  the parameters its glob names;
- grad-accum-scale (the schedule scales the loss's output gradient): every replayed module
  inherited, and the divergence entering at the loss's output gradient;
- a correct candidate: nothing introduced (exit 0); every bug: exit 1.

    python bench/localize_matrix.py --out DIR [--refs DIR] [--precisions fp32,bf16]
        [--bugs a,b] [--correct all|none|TP2,CP2,...] [--json FILE] [--markdown FILE]

References are named as bench/verdict_sweep.py names them (`ref-KEY-PRECISION-sSEED`) and
reused from --refs (default --out). Candidates are captured afresh: the agent serves the job
that wrote them. Also reported: the time of every replay (client side, request to judgement,
and agent side) and of each whole `ttrace localize` (diff + walk).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import statistics
import subprocess
import time
from pathlib import Path

from ttrace_testing.bug_specs import SPECS, BugSpec
from ttrace_testing.zoo_lib import CONFIGS, TTRACE, Config, ServingCandidate, run_reference

PHASE_WORDS = {"gradient_reduction": "gradient reduction", "optimizer_step": "optimizer step"}
# Bugs in code that every instance of a module runs: each instance, given the reference's
# inputs, still diverges, so each is rightly introduced (python/ttrace_testing/bug_specs.py `where`
# names the first in time, which must be among them). The rotary positions live in every attention
# module; the unreduced FP8 amax in every FP8 GEMM (examples/gpt/bugs.py says where).
SHARED_CODE: dict[str, tuple[str, ...]] = {
    "rope-cp-offset": ("layers.*.self_attention",),
    "fp8-amax-not-reduced": ("layers.*.linear_*", "output_layer"),
}
# The loss's output gradient: what the schedule scales (grad-accum-scale).
ENTRY_BUGS = {"grad-accum-scale"}


def reference(refs: Path, cfg: Config, precision: str, seed: int) -> Path:
    key = "-".join(cfg.shared).replace("--", "") or "plain"
    ref = refs / f"ref-{key}-{precision}-s{seed}"
    if not (ref / "manifest.json").exists():
        run_reference(ref, cfg, precision, seed)
    return ref


def localize(job: ServingCandidate, ref: Path, address: str, out: Path) -> tuple[int, float]:
    cmd = [
        str(TTRACE), "localize", str(ref), str(job.bundle), "--agent", address,
        "--token-file", str(job.token), "--json", str(out.with_suffix(".json")),
        "--markdown", str(out.with_suffix(".md")), "--no-cache", "--shutdown",
    ]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    seconds = time.monotonic() - started
    out.with_suffix(".txt").write_text(done.stdout + done.stderr)
    return done.returncode, seconds


def _below(name: str, guilty: list[str]) -> bool:
    return any(g.startswith(name + ".") for g in guilty)


def check(spec: BugSpec | None, code: int, rep: dict) -> list[str]:
    """What is wrong with the answer; empty when it is the expected one."""
    verdicts = rep["verdicts"]
    introduced = [v["module"] for v in verdicts if v["verdict"] == "introduced" and v["module"]]
    phase, guilty = rep["guilty_phase"], rep["guilty"]
    if spec is None:
        return [] if code == 0 and not rep["introduced"] else [f"exit {code}: {rep['conclusion']}"]
    problems = [] if code == 1 else [f"exit {code}, expected 1: {rep['conclusion']}"]
    if spec.bug in ENTRY_BUGS:
        bad = [v["module"] for v in verdicts if v["verdict"] != "inherited"]
        entry = rep.get("entry") or {}
        problems += [f"not inherited: {bad}"] if bad or not verdicts else []
        if (entry.get("module"), entry.get("kind")) != ("loss", "output_grad"):
            problems.append(f"entry {entry or None}, expected loss output_grad")
        return problems
    if spec.where.startswith("optimizer: "):
        glob = spec.where.removeprefix("optimizer: ")
        problems += [f"modules introduced: {introduced}"] if introduced else []
        # The phase the bug enters in, as the diff names it (python/ttrace_testing/bug_specs.py
        # `phase`).
        wanted = PHASE_WORDS[spec.phase]
        if phase != wanted:
            problems.append(f"phase {phase}, expected {wanted}: {rep['conclusion']}")
        params = rep["guilty_parameters"]
        if not params or not all(fnmatch.fnmatchcase(p, glob) for p in params):
            problems.append(f"parameters {params}, expected {glob}")
        return problems
    globs = SHARED_CODE.get(spec.bug, (spec.where,))
    holds = [g for g in guilty if any(fnmatch.fnmatchcase(g, w) for w in globs)]
    first = any(fnmatch.fnmatchcase(g, spec.where) for g in guilty)
    if not first or holds != guilty:
        problems.append(f"guilty {guilty}, expected {' or '.join(globs)}: {rep['conclusion']}")
    others = [m for m in introduced if m not in guilty and not _below(m, guilty)]
    if others:
        problems.append(f"also introduced: {others}")
    return problems


def run_case(args: argparse.Namespace, spec: BugSpec | None, cfg: Config, precision: str) -> dict:
    name = f"{spec.bug if spec else 'correct-' + cfg.name}-{precision}"
    row: dict = {"case": name, "bug": spec.bug if spec else None, "layout": cfg.name,
                 "precision": precision}  # fmt: skip
    ref = reference(args.refs, cfg, precision, args.seed)
    inject = ("--inject", spec.bug) if spec else ()
    started = time.monotonic()
    with ServingCandidate(args.out / name, cfg, precision, args.seed, ref, *inject) as job:
        address = job.wait_serving()
        row["capture_s"] = time.monotonic() - started
        code, seconds = localize(job, ref, address, args.out / name)
        try:
            job.proc.wait(timeout=120)  # --shutdown ends the job
        except subprocess.TimeoutExpired:
            row["job"] = "did not exit after shutdown"
    report = args.out / f"{name}.json"
    if not report.exists():
        row.update(exit=code, problems=[(args.out / f"{name}.txt").read_text()[-500:]])
        return row
    rep = json.loads(report.read_text())
    row.update(
        exit=code, localize_s=seconds, walk_s=rep["seconds"], conclusion=rep["conclusion"],
        guilty=rep["guilty"], phase=rep["guilty_phase"], parameters=rep["guilty_parameters"],
        replays=[{k: v[k] for k in ("module", "phase", "verdict", "ratio", "seconds",
                                    "agent_seconds", "reason")} for v in rep["verdicts"]],
        problems=check(spec, code, rep),
    )  # fmt: skip
    return row


def cases(args: argparse.Namespace) -> list[tuple[BugSpec | None, Config, str]]:
    precs = args.precisions.split(",")
    only = set(filter(None, args.bugs.split(",")))
    out: list[tuple[BugSpec | None, Config, str]] = []
    for p in precs:
        for spec in SPECS:
            if (not only or spec.bug in only) and args.bugs != "none":
                # The fp8 bug exists only in the fp8 recipe: it runs there, once.
                prec = "fp8" if spec.precisions == ("fp8",) else p
                if prec in spec.precisions and (prec == p or p == precs[0]):
                    out.append((spec, CONFIGS[spec.config], prec))
    layouts = {"none": [], "all": list(CONFIGS)}.get(args.correct, args.correct.split(","))
    out += [(None, CONFIGS[c], p) for p in precs for c in layouts]
    return out


def summary(values: list[float]) -> str:
    if not values:
        return "-"
    return (
        f"n {len(values)}, median {statistics.median(values):.2f} s, "
        f"mean {statistics.fmean(values):.2f} s, max {max(values):.2f} s"
    )


def markdown(rows: list[dict]) -> str:
    lines = [
        "| case | layout | precision | exit | answer | replays | localize (s) | check |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        answer = r.get("conclusion") or "-"
        n = len(r.get("replays", []))
        ok = "ok" if not r.get("problems") else "FAIL: " + "; ".join(r["problems"])
        ok = ok.replace("|", "/").replace("\n", " ")[:300]
        lines.append(
            f"| {r['bug'] or 'correct'} | {r['layout']} | {r['precision']} | {r.get('exit')} "
            f"| {answer} | {n} | {r.get('localize_s', 0):.1f} | {ok} |"
        )
    replays = [v for r in rows for v in r.get("replays", []) if v["verdict"] != "not replayable"]
    lines += [
        "",
        "Per replayed module, client (request to judgement): "
        + summary([v["seconds"] for v in replays]),
        "Per replayed module, agent: " + summary([v["agent_seconds"] for v in replays]),
        "Whole `ttrace localize` (diff + walk): "
        + summary([r["localize_s"] for r in rows if "localize_s" in r]),
    ]
    return "\n".join(lines) + "\n"


def rejudge(args: argparse.Namespace) -> int:
    """The checks again over the reports a run left (--json rows, reports under --out)."""
    specs = {s.bug: s for s in SPECS}
    rows = json.loads(args.json.read_text())
    for r in rows:
        report = args.out / f"{r['case']}.json"
        if "exit" in r and report.exists():
            r["problems"] = check(specs.get(r["bug"]), r["exit"], json.loads(report.read_text()))
    args.json.write_text(json.dumps(rows, indent=1) + "\n")
    table = markdown(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    return 1 if any(r.get("problems") for r in rows) else 0


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--out", type=Path, required=True)
    a.add_argument("--refs", type=Path, default=None)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--precisions", default="fp32,bf16")
    a.add_argument("--bugs", default="", help="comma-separated subset, or none")
    a.add_argument("--correct", default="all", help="all, none or comma-separated layouts")
    a.add_argument("--json", type=Path, default=None)
    a.add_argument("--markdown", type=Path, default=None)
    a.add_argument(
        "--rejudge", action="store_true", help="re-check the reports of --json, run nothing"
    )
    args = a.parse_args(argv)
    if args.rejudge:
        return rejudge(args)
    args.refs = args.refs or args.out
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for spec, cfg, precision in cases(args):
        try:
            row = run_case(args, spec, cfg, precision)
        except (RuntimeError, TimeoutError, subprocess.TimeoutExpired) as e:
            row = {"case": f"{spec.bug if spec else cfg.name}-{precision}", "layout": cfg.name,
                   "bug": spec.bug if spec else None, "precision": precision,
                   "problems": [str(e)[-500:]]}  # fmt: skip
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1) + "\n")
    table = markdown(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table)
    return 1 if any(r.get("problems") for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
