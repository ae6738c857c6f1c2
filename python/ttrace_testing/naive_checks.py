"""The checks people use instead of ttrace, applied to the same merged tensors: the
baselines of the detection-power benchmark and of the false-alarm sweep.

- assert_close: `torch.testing.assert_close` with its default rtol/atol for the storage dtype;
- cosine: flag when cosine similarity < 0.99;
- fixed bound: flag when the relative error > 4 * 1.03^33 * eps (Megatron-LM's hard-coded
  k=4, C=1.03, L=32 bound; eps of the accumulating dtype, BF16's for FP8).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from ttrace.bundle.reader import BundleReader, rel_error
from ttrace.capture.precision import machine_eps

# The dtype each recipe accumulates in; `machine_eps` maps FP8 to BF16's eps, as the
# tolerance does (docs/tolerance.md).
ACCUMULATING = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}
TORCH_DTYPE = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
METHODS = ("assert_close", "cosine", "fixed bound")

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


def fixed_bound(precision: str) -> float:
    return 4 * 1.03**33 * machine_eps(ACCUMULATING[precision])


def _fixed(precision: str) -> Method:
    bound = fixed_bound(precision)
    return lambda c, r, _dtype: rel_error(c, r) > bound


def naive_flags(ref: Path, cand: Path, precision: str) -> dict[str, list[str]]:
    """The tensors each naive method flags (labels `iter I mb M module kind[slot]`)."""
    methods: dict[str, Method] = {
        "assert_close": _assert_close,
        "cosine": _cosine,
        "fixed bound": _fixed(precision),
    }
    rr, cr = BundleReader(ref), BundleReader(cand)
    flagged: dict[str, list[str]] = {m: [] for m in methods}
    for ident in cr.identities():
        dtype = cr.shards(ident)[0].dtype
        if not dtype.startswith(("float", "bfloat")):
            continue  # token ids and masks: every method compares them exactly
        c, r = cr.merged(ident), rr.merged(("nominal", *ident[1:]))
        _variant, it, mb, module, kind, slot = ident
        label = f"iter {it} mb {'all' if mb < 0 else mb} {module} {kind}[{slot}]"  # as ttrace's
        for name, m in methods.items():
            if m(c, r, dtype):
                flagged[name].append(label)
    return flagged
