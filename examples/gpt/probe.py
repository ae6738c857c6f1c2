"""Calibration probe for the detection-power benchmark (bench/detection_power.py).

Deliberately artificial, unlike the bug zoo: it scales one module's forward output by
`1 + delta` on one rank, so that the benchmark can sweep a known relative error and find the
smallest one each comparison method detects."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def parse_probe(spec: str) -> tuple[str, float]:
    module, _, delta = spec.rpartition(":")
    if not module:
        raise SystemExit(f"--probe-delta wants MODULE:DELTA, got {spec!r}")
    return module, float(delta)


def install_probe(model: nn.Module, spec: str) -> None:
    name, delta = parse_probe(spec)
    module = model.get_submodule(name)

    def hook(_m: nn.Module, _inp: Any, out: torch.Tensor) -> torch.Tensor:
        # In fp32 so that a delta below the storage precision still rounds, not vanishes.
        return (out.float() * (1.0 + delta)).to(out.dtype)

    module.register_forward_hook(hook)
