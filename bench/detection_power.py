"""Detection power near the round-off floor, with zero false alarms.

A calibration probe (`--probe-delta MODULE:DELTA`, examples/gpt/probe.py) scales one module's
forward output by 1+DELTA on global rank 0 of a TP2 candidate. For each precision the sweep
finds the smallest DELTA each method detects, where a method "detects" a run when it flags
any tensor of it, and counts its false alarms on the same candidate without the probe.
Methods, all on the same merged tensors:

- ttrace: `ttrace diff` (derived per-tensor tolerance, perturbed reference);
- assert_close: torch.testing.assert_close with its default rtol/atol for the storage dtype;
- cosine: flag when cosine similarity < 0.99;
- fixed bound: flag when the relative error > 4 * 1.03^33 * eps (Megatron-LM's hard-coded
  k=4, C=1.03, L=32 bound; eps of the accumulating dtype, BF16's for FP8).

The detected DELTA is also given in units of the probed tensor's measured round-off floor
(the mean relative difference between the nominal and perturbed reference runs).

    python bench/detection_power.py [--precisions fp32,bf16,fp8] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from bench.zoo_lib import CONFIGS, diff, run_candidate, run_reference
from ttrace.bundle.reader import BundleReader, rel_error

MODULE = "layers.0.mlp.linear_fc2"
SEED = 1234
EPS = {"fp32": 2.0**-23, "bf16": 2.0**-7, "fp8": 2.0**-7}
DELTAS = {
    "fp32": [1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 3e-5, 1e-4, 1e-3, 1e-2],
    # --fine: steps of ~1.5x where the methods part ways in FP32.
    "fp32-fine": [2e-7, 3e-7, 4.5e-7, 7e-7, 1e-6, 1.5e-6, 2.2e-6, 3.3e-6, 5e-6, 7.5e-6, 1.1e-5],
    "bf16": [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
    "fp8": [1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
}
TORCH_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

Method = Callable[[np.ndarray, np.ndarray, str], bool]


def _assert_close(c: np.ndarray, r: np.ndarray, dtype: str) -> bool:
    dt = TORCH_DTYPE.get(dtype, torch.float32)
    try:
        torch.testing.assert_close(torch.from_numpy(c).to(dt), torch.from_numpy(r).to(dt))
    except AssertionError:
        return True
    return False


def _cosine(c: np.ndarray, r: np.ndarray, _dtype: str) -> bool:
    nc, nr = np.linalg.norm(c), np.linalg.norm(r)
    if nc == 0 or nr == 0:
        return bool(nc != nr)
    return float(np.dot(c.ravel(), r.ravel()) / (nc * nr)) < 0.99


def _fixed(precision: str) -> Method:
    bound = 4 * 1.03**33 * EPS[precision]
    return lambda c, r, _dtype: rel_error(c, r) > bound


def naive_flags(ref: Path, cand: Path, precision: str) -> dict[str, int]:
    """How many tensors each naive method flags."""
    methods: dict[str, Method] = {
        "assert_close": _assert_close,
        "cosine": _cosine,
        "fixed bound": _fixed(precision),
    }
    rr, cr = BundleReader(ref), BundleReader(cand)
    counts = dict.fromkeys(methods, 0)
    for ident in cr.identities():
        dtype = cr.shards(ident)[0].dtype
        if not dtype.startswith(("float", "bfloat")):
            continue  # token ids and masks: every method compares them exactly
        c, r = cr.merged(ident), rr.merged(("nominal", *ident[1:]))
        for name, m in methods.items():
            counts[name] += m(c, r, dtype)
    return counts


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


def sweep(precision: str, work: Path, module: str = MODULE, fine: bool = False) -> list[str]:
    cfg = CONFIGS["TP2"]
    ref = run_reference(work / f"ref-{precision}", cfg, precision, SEED)
    clean = run_candidate(work / f"clean-{precision}", cfg, precision, SEED, ref=ref)
    v0 = diff(ref, clean, work / f"clean-{precision}.json")
    floor, tol = floor_of_probe(v0.report, module)
    false_alarms = {"ttrace": v0.divergent, **naive_flags(ref, clean, precision)}
    smallest: dict[str, tuple[float, float] | None] = dict.fromkeys(false_alarms)
    deltas = (
        DELTAS[f"{precision}-fine"] if fine and f"{precision}-fine" in DELTAS else DELTAS[precision]
    )
    for delta in deltas:
        cand = run_candidate(
            work / f"probe-{precision}-{delta:g}", cfg, precision, SEED,
            "--probe-delta", f"{module}:{delta:g}", ref=ref,
        )  # fmt: skip
        v = diff(ref, cand, cand.with_suffix(".json"))
        probed = rel_error(
            BundleReader(cand).merged(("nominal", 0, 0, module, "forward_output", "0")),
            BundleReader(ref).merged(("nominal", 0, 0, module, "forward_output", "0")),
        )
        flags = {"ttrace": v.divergent, **naive_flags(ref, cand, precision)}
        for name, n in flags.items():
            if smallest[name] is None and n > 0:
                smallest[name] = (delta, probed)
        print(f"  {precision} delta {delta:g}: probed rel err {probed:.3g}, flags {flags}")
    rows = []
    for name, hit in smallest.items():
        fa = false_alarms[name]
        if hit is None:
            found = "not detected in sweep"
        else:
            found = f"{hit[0]:g} (rel err {hit[1]:.3g} = {hit[1] / floor:.3g} x floor)"
        usable = "yes" if fa == 0 else f"NO ({fa} false alarms)"
        rows.append(f"| {precision} | {module} | {name} | {found} | {usable} |")
    rows.append(
        f"| {precision} | {module} | (probed tensor) | floor mean {floor:.3g}, "
        f"ttrace tolerance {tol:.3g} | |"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    a.add_argument("--precisions", default="fp32,bf16,fp8")
    a.add_argument("--module", default=MODULE, help="module whose output the probe scales")
    a.add_argument("--fine", action="store_true", help="finer delta steps (FP32)")
    a.add_argument("--out", type=Path, default=None)
    a.add_argument("--markdown", type=Path, default=Path("detection-power.md"))
    args = a.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="detection-"))
    work.mkdir(parents=True, exist_ok=True)
    rows = [
        "| precision | probed module | method | smallest delta detected "
        "| zero false alarms on the clean run |",
        "|---|---|---|---|---|",
    ]
    for p in args.precisions.split(","):
        rows += sweep(p, work, args.module, args.fine)
    text = "\n".join(rows) + "\n"
    print(text)
    args.markdown.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
