"""Detection power near the round-off floor, with zero false alarms.

A calibration probe (`--probe-delta MODULE:DELTA`, examples/gpt/probe.py) scales one module's
forward output by 1+DELTA on global rank 0 of a TP2 candidate. For each precision the sweep
finds the smallest DELTA each method detects, where a method "detects" a run when it flags
any tensor of it, and counts its false alarms on the same candidate without the probe.
Methods, all on the same merged tensors: ttrace (`ttrace diff`, derived per-tensor tolerance
from the perturbed reference) and the naive checks of python/ttrace_testing/naive_checks.py
(assert_close with default tolerances, cosine < 0.99, the fixed upstream bound 4 * 1.03^33 * eps).

A detection only counts when the method is also silent on correct runs. One clean run says
little, so `--clean-sweep FILE` reads the totals of `bench/false_alarms.py --baselines
--json FILE` (every layout, precision and seed) and adds each method's false alarms over that
sweep, plus two baselines tuned after the fact to be silent on it: a relative-error bound at
the largest clean error of the sweep and a cosine threshold at its smallest clean cosine
(tuned on the very runs they are judged on, so their zero false alarms is optimistic).

The detected DELTA is also given in units of the probed tensor's measured round-off floor
(the mean relative difference between the nominal and perturbed reference runs).

    python bench/detection_power.py [--precisions fp32,bf16,fp8] [--modules M1,M2]
        [--fine] [--clean-sweep false-alarms.json] [--raw FILE] [--markdown FILE]
    python bench/detection_power.py --from-raw --raw FILE --clean-sweep false-alarms.json
"""

from __future__ import annotations

import argparse
import functools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from ttrace.bundle.reader import BundleReader, rel_error
from ttrace_testing.naive_checks import naive_flags
from ttrace_testing.zoo_lib import (
    CONFIGS,
    Verdict,
    diff,
    float_tensors,
    run_candidate,
    run_reference,
)

MODULE = "layers.0.mlp.linear_fc2"
SEED = 1234
DELTAS = {
    "fp32": [1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2],
    "bf16": [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
    "fp8": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
}
# --fine: steps of ~1.5x where the methods part ways.
FINE = {
    "fp32": [2e-7, 3e-7, 4.5e-7, 7e-7, 1e-6, 1.5e-6, 2.2e-6, 3.3e-6, 5e-6, 7.5e-6, 1.1e-5],
    "bf16": [1e-2, 1.5e-2, 2.2e-2, 3.3e-2, 5e-2, 7e-2, 1e-1, 1.5e-1, 2.2e-1, 3.3e-1],
    "fp8": [3e-5, 5e-5, 1e-4, 1.5e-4, 2.2e-4, 3.3e-4, 5e-4, 7.5e-4, 1.1e-3, 1e-2, 3e-2, 1e-1],
}
TUNED_FIXED = "fixed bound tuned to the sweep"
TUNED_COSINE = "cosine tuned to the sweep"


def floor_of_probe(report: dict, module: str) -> tuple[float, float]:
    """(floor mean, tolerance) of the probed module's first forward output."""
    for t in report["tensors"]:
        i = t["id"]
        if (i["module"], i["kind"], i["iteration"], i["micro_batch"]) == (
            module, "forward_output", 0, 0,
        ):  # fmt: skip
            d = t["tolerance_detail"]
            return float(d["floor_mean"]), float(d["value"])
    raise LookupError(f"{module} forward_output not in the report")


def record(v: Verdict, ref: Path, cand: Path, precision: str) -> dict:
    """What a run tells every method: ttrace's and the naive checks' flag counts, and each
    float tensor's relative error and cosine (for the thresholds tuned to the clean sweep)."""
    tensors = float_tensors(v.report)
    return {
        "flags": {
            "ttrace": v.divergent,
            **{m: len(f) for m, f in naive_flags(ref, cand, precision).items()},
        },
        "errors": [t["error"] for t in tensors],
        "cosines": [
            t["metrics"]["cosine"] for t in tensors if t["metrics"].get("cosine") is not None
        ],
    }


def measure(
    precision: str,
    work: Path,
    modules: list[str],
    deltas: list[float],
    out: dict,
    save: Callable[[], None],
) -> None:
    """Fills `out` (this precision's part of the raw file) and saves after every run, so an
    interrupted run resumes where it stopped and more deltas can be added later (same --out,
    same --raw): only the deltas a module has no run for are measured."""
    cfg = CONFIGS["TP2"]
    ref = work / f"ref-{precision}"
    if not (ref / "manifest.json").exists():
        run_reference(ref, cfg, precision, SEED)
    if "clean" not in out:
        clean = run_candidate(work / f"clean-{precision}", cfg, precision, SEED, ref=ref)
        v0 = diff(ref, clean, work / f"clean-{precision}.json")
        out["clean"] = record(v0, ref, clean, precision)
        out["clean_report"] = str(work / f"clean-{precision}.json")
        save()
    report = json.loads(Path(out["clean_report"]).read_text())
    out.setdefault("modules", {})
    for module in modules:
        floor, tol = floor_of_probe(report, module)
        m = out["modules"].setdefault(module, {"floor": floor, "tolerance": tol, "runs": []})
        runs = m["runs"]
        for delta in sorted(set(deltas) - {r["delta"] for r in runs}):
            cand = run_candidate(
                work / f"probe-{precision}-{module}-{delta:g}", cfg, precision, SEED,
                "--probe-delta", f"{module}:{delta:g}", ref=ref,
            )  # fmt: skip
            v = diff(ref, cand, cand.parent / f"{cand.name}.json")  # module names hold dots
            key = ("nominal", 0, 0, module, "forward_output", "0")
            probed = rel_error(BundleReader(cand).merged(key), BundleReader(ref).merged(key))
            run = {"delta": delta, "probed": probed, **record(v, ref, cand, precision)}
            runs.append(run)
            runs.sort(key=lambda r: r["delta"])
            save()
            print(f"  {precision} {module} delta {delta:g}: rel err {probed:.3g}, "
                  f"{run['flags']}", flush=True)  # fmt: skip


def flags_of(run: dict, sweep: dict | None) -> dict[str, int]:
    """Flag counts per method, with the tuned thresholds when a clean sweep is given."""
    flags = dict(run["flags"])
    if sweep is not None:
        bound, cosine = sweep["max_rel_error"]["value"], sweep["min_cosine"]["value"]
        flags[TUNED_FIXED] = sum(e > bound for e in run["errors"])
        flags[TUNED_COSINE] = sum(c < cosine for c in run["cosines"])
    return flags


def sweep_alarms(name: str, sweep: dict | None) -> str:
    if sweep is None:
        return "not measured"
    if name == TUNED_FIXED:
        return f"0 of {sweep['runs']} runs (bound {sweep['max_rel_error']['value']:.3g})"
    if name == TUNED_COSINE:
        gap = 1.0 - sweep["min_cosine"]["value"]
        return f"0 of {sweep['runs']} runs (threshold 1 - {gap:.3g})"
    f = sweep["flags"].get(name)
    if f is None:
        return "not measured"
    return f"{f['tensors']} tensors in {f['runs']} of {sweep['runs']} runs"


Hit = tuple[float, float]  # (delta, the probed tensor's relative error at that delta)


def detections(runs: list[dict], sweep: dict | None, methods: list[str]) -> dict:
    """Per method, (first, steady): the first run it flags, and the smallest delta from
    which it flags every larger delta of the sweep (they differ when detection is not
    monotone in delta, as FP8 rounding can make it); None where there is none."""
    out: dict[str, tuple[Hit | None, Hit | None]] = {}
    flags = [flags_of(run, sweep) for run in runs]
    for name in methods:
        hits = [f[name] > 0 for f in flags]
        hit_runs = [(r["delta"], r["probed"]) for r, h in zip(runs, hits, strict=True) if h]
        first = hit_runs[0] if hit_runs else None
        steady = None
        for i in range(len(runs) - 1, -1, -1):
            if not hits[i]:
                break
            steady = (runs[i]["delta"], runs[i]["probed"])
        out[name] = (first, steady)
    return out


def describe(first: Hit | None, steady: Hit | None, floor: float, short: bool = False) -> str:
    if first is None:
        return "-" if short else "not detected in sweep"
    if floor <= 0:  # a probed tensor no perturbation moved: no unit to express it in
        text = f"{first[0]:g}" if short else f"{first[0]:g} (rel err {first[1]:.3g}, floor 0)"
    elif short:
        text = f"{first[0]:g} ({first[1] / floor:.2g}x)"
    else:
        text = f"{first[0]:g} (rel err {first[1]:.3g} = {first[1] / floor:.3g} x floor)"
    if steady != first:
        text += ", every delta from " + ("-" if steady is None else f"{steady[0]:g}")
    return text


def tabulate(precision: str, raw: dict, sweep: dict | None) -> list[str]:
    clean = flags_of(raw["clean"], sweep)
    rows = []
    for module, m in raw["modules"].items():
        for name, (first, steady) in detections(m["runs"], sweep, list(clean)).items():
            rows.append(
                f"| {precision} | {module} | {name} | {describe(first, steady, m['floor'])} "
                f"| {clean[name]} | {sweep_alarms(name, sweep)} |"
            )
        rows.append(
            f"| {precision} | {module} | (probed tensor) | floor mean {m['floor']:.3g}, "
            f"ttrace tolerance {m['tolerance']:.3g} | | |"
        )
    return rows


def summarize(raw: dict, clean_sweep: dict) -> list[str]:
    """One row per precision and probed module, one column per method: the smallest delta
    (x the probed tensor's floor) detected, struck out when the method is not silent on
    correct runs (the same clean run, or any run of the clean sweep when given)."""
    methods: list[str] = []
    rows: list[str] = []
    for precision, measured in raw.items():
        sweep = clean_sweep.get(precision)
        clean = flags_of(measured["clean"], sweep)
        methods = methods or list(clean)
        for module, m in measured["modules"].items():
            cells = []
            for name, (first, steady) in detections(m["runs"], sweep, list(clean)).items():
                cell = describe(first, steady, m["floor"], short=True)
                alarms = clean[name] + (sweep["flags"].get(name, {}).get("runs", 0) if sweep else 0)
                cells.append(f"~~{cell}~~ false alarms" if alarms else cell)
            rows.append(f"| {precision} | {module} | " + " | ".join(cells) + " |")
    head = "| precision | probed module | " + " | ".join(methods) + " |"
    return [head, "|" + "---|" * (len(methods) + 2), *rows]


def save_raw(path: Path, raw: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(raw) + "\n")
    tmp.replace(path)  # never a half-written file to resume from


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--precisions", default="fp32,bf16,fp8")
    a.add_argument("--modules", default=MODULE, help="modules whose output the probe scales")
    a.add_argument("--fine", action="store_true", help="finer delta steps")
    a.add_argument("--deltas", default="", help="comma-separated deltas instead of the lists")
    a.add_argument("--clean-sweep", type=Path, default=None, help="false_alarms.py --json")
    a.add_argument("--raw", type=Path, default=Path("detection-power.json"), help="measurements")
    a.add_argument("--from-raw", action="store_true", help="tabulate --raw without running")
    a.add_argument("--out", type=Path, default=None, help="keep bundles here")
    a.add_argument("--markdown", type=Path, default=Path("detection-power.md"))
    args = a.parse_args(argv)
    if args.from_raw:
        raw = json.loads(args.raw.read_text())
    else:
        work = args.out or Path(tempfile.mkdtemp(prefix="detection-"))
        work.mkdir(parents=True, exist_ok=True)
        modules = args.modules.split(",")
        raw = json.loads(args.raw.read_text()) if args.raw.exists() else {}
        save = functools.partial(save_raw, args.raw, raw)
        for p in args.precisions.split(","):
            deltas = (FINE if args.fine else DELTAS)[p]
            if args.deltas:
                deltas = [float(d) for d in args.deltas.split(",")]
            measure(p, work, modules, deltas, raw.setdefault(p, {}), save)
    clean = json.loads(args.clean_sweep.read_text())["precisions"] if args.clean_sweep else {}
    rows = [
        "| precision | probed module | method | smallest delta detected "
        "| false alarms on the same clean run | false alarms over the clean sweep |",
        "|---|---|---|---|---|---|",
    ]
    for p, measured in raw.items():
        rows += tabulate(p, measured, clean.get(p))
    text = "\n".join(summarize(raw, clean)) + "\n\n" + "\n".join(rows) + "\n"
    print(text)
    args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
