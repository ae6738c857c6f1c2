"""One variant per run: the reference's perturbed variants by relaunching the script.

A training loop owned by a framework (`Trainer.train()`, `trainer.fit()`, `pretrain()`)
cannot be wrapped in `tracer.run_variants()`. `ttrace capture --reference --perturbations K
-- CMD` instead runs the unchanged script K + 1 times; each run's Tracer reads its variant
from the environment below, captures that variant for the whole run, and writes it to its
own folder; the launcher then joins the runs into one reference bundle
(`ttrace.bundle.variant_join`). Every run starts from the script's own initial state, as each
variant of `run_variants()` starts from the state at its call, so the floors are the same.

Environment (set by the launcher; users do not set it by hand):
- ``TTRACE_CAPTURE_ROLE``: ``reference`` or ``candidate``; overrides the script's `role=`.
- ``TTRACE_CAPTURE_OUT``: the folder this run writes; overrides the script's `out_dir`.
- ``TTRACE_CAPTURE_VARIANT``: ``k/K`` (reference only): this run is variant ``perturbed-k``
  of K, or the nominal run for k = 0.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .errors import TracerError

ROLE_VAR = "TTRACE_CAPTURE_ROLE"
OUT_VAR = "TTRACE_CAPTURE_OUT"
VARIANT_VAR = "TTRACE_CAPTURE_VARIANT"

_VARIANT = re.compile(r"^(\d+)/(\d+)$")


@dataclass(frozen=True)
class VariantRun:
    """What the launcher asked of this run."""

    role: str
    out_dir: Path
    index: int = 0  # k of perturbed-k; 0 for the nominal run (and every candidate)
    count: int = 0  # K: the reference's number of perturbed variants

    @property
    def variant(self) -> str:
        return "nominal" if self.index == 0 else f"perturbed-{self.index}"

    def environment(self) -> dict[str, str]:
        """The variables that make a run this one (the launcher's side)."""
        env = {ROLE_VAR: self.role, OUT_VAR: str(self.out_dir)}
        if self.role == "reference":
            env[VARIANT_VAR] = f"{self.index}/{self.count}"
        return env


def _bad(variable: str, value: str, expected: str) -> TracerError:
    return TracerError(
        f"ttrace: environment variable {variable}={value!r} is not valid: expected {expected} "
        "(it is set by `ttrace capture`; unset it to run the script on its own)"
    )


def run_from_environment(env: Mapping[str, str] | None = None) -> VariantRun | None:
    """The run the launcher asked for, or None when the script runs on its own."""
    env = os.environ if env is None else env
    role = env.get(ROLE_VAR)
    if role is None:
        return None
    if role not in ("reference", "candidate"):
        raise _bad(ROLE_VAR, role, "'reference' or 'candidate'")
    out = env.get(OUT_VAR, "")
    if not out:
        raise _bad(OUT_VAR, out, "the folder this run writes")
    raw = env.get(VARIANT_VAR)
    if role == "candidate":
        if raw is not None:
            raise _bad(VARIANT_VAR, raw, "nothing: a candidate has only the nominal variant")
        return VariantRun(role, Path(out))
    match = _VARIANT.match(raw or "")
    if match is None:
        raise _bad(VARIANT_VAR, raw or "", "'k/K' with 0 <= k <= K")
    index, count = int(match.group(1)), int(match.group(2))
    if index > count:
        raise _bad(VARIANT_VAR, raw or "", "'k/K' with 0 <= k <= K")
    return VariantRun(role, Path(out), index, count)
