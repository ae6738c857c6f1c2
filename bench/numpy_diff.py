"""The baseline of bench/perf_table.py: a straightforward numpy + h5py implementation of what
`ttrace diff` computes for every nominal tensor of a bundle pair (merge of both sides; relative
error, max abs error and cosine; the noise floor from the reference's perturbed variants; the
error histogram in tolerance units). It is what a user would write in an afternoon, and it is
checked to agree with `ttrace diff --json` so the timing compares like with like.

usage: python bench/numpy_diff.py REFERENCE CANDIDATE [--check DIFF_JSON]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ttrace.bundle.reader import BundleReader, rel_error

Identity = tuple[str, int, int, str, str, str]


def metrics(ref: np.ndarray, cand: np.ndarray, unit: float) -> dict[str, float]:
    r = ref.astype(np.float64).ravel()
    c = cand.astype(np.float64).ravel()
    d = c - r
    rn, cn = float(np.linalg.norm(r)), float(np.linalg.norm(c))
    err = np.abs(d)
    nonzero = err[err > 0]
    decades = np.floor(np.log10(nonzero / unit)) if unit > 0 else np.full(nonzero.size, 5.0)
    hist = np.bincount((np.clip(decades, -6, 5) + 6).astype(np.int64), minlength=12)
    return {
        "rel_error": rel_error(c, r),
        "max_abs_error": float(err.max()) if err.size else 0.0,
        "cosine": float(r @ c / (rn * cn)) if rn > 0 and cn > 0 else 1.0,
        "histogram_total": int(hist.sum()),
    }


def diff(reference: Path, candidate: Path) -> dict[Identity, dict[str, float]]:
    ref, cand = BundleReader(reference), BundleReader(candidate)
    perturbed = [v for v in ref.manifest["variants"] if v != "nominal"]
    known = set(ref.identities())
    out: dict[Identity, dict[str, float]] = {}
    for identity in cand.identities():
        if identity[0] != "nominal" or identity not in known:
            continue
        r = ref.merged(identity)
        c = cand.merged(identity)
        floors = [
            rel_error(ref.merged((v, *identity[1:])).astype(np.float64), r.astype(np.float64))
            for v in perturbed
            if (v, *identity[1:]) in known
        ]
        rms = float(np.sqrt(np.mean(np.square(r.astype(np.float64))))) if r.size else 0.0
        # The unit of the histogram: the floor-derived tolerance is the engine's business; the
        # baseline uses the mean floor (or 1e-6) so the histogram pass costs what it costs.
        tolerance = max(float(np.mean(floors)) if floors else 0.0, 1e-6)
        out[identity] = metrics(r, c, tolerance * rms) | {"floors": len(floors)}
    return out


def check(result: dict[Identity, dict[str, float]], diff_json: Path) -> int:
    """Number of tensors whose relative error differs from `ttrace diff`'s beyond 1e-9
    relative (both accumulate in double; only summation order differs)."""
    tensors = json.loads(diff_json.read_text(encoding="utf-8"))["tensors"]
    bad = 0
    for t in tensors:
        i = t["id"]
        key = (i["variant"], i["iteration"], i["micro_batch"], i["module"], i["kind"], i["index"])
        mine = result.get(key)
        if mine is None or t["status"] in ("missing", "invalid"):
            continue
        theirs = float(t["metrics"]["rel_error"])
        if abs(mine["rel_error"] - theirs) > 1e-9 * max(abs(theirs), 1e-300) + 1e-300:
            bad += 1
            print(f"disagree {key}: numpy {mine['rel_error']!r} vs ttrace {theirs!r}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reference", type=Path)
    parser.add_argument("candidate", type=Path)
    parser.add_argument("--check", type=Path, help="ttrace diff --json output to compare with")
    args = parser.parse_args()
    result = diff(args.reference, args.candidate)
    print(f"{len(result)} tensors compared")
    if args.check:
        bad = check(result, args.check)
        print(f"agreement with ttrace diff: {len(result) - bad} of {len(result)} tensors")
        sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
