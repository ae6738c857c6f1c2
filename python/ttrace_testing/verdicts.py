"""How a bug-zoo case is judged from its `ttrace diff` report: is the guilty module
"introduced", which other modules are, in which phase the first divergence lies. Shared by the
verdict sweep (bench/verdict_sweep.py) and the bug-zoo test; the counting rules are in the
sweep's docstring."""

from __future__ import annotations

import fnmatch
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ttrace_testing.bug_specs import BugSpec


def _guilty(spec: BugSpec, modules: list[str]) -> set[str]:
    glob = spec.where.removeprefix("optimizer: ")
    return {m for m in modules if fnmatch.fnmatchcase(m, glob)}


def _contains(parent: str, child: str) -> bool:
    return child.startswith(parent + ".")


def judge(spec: BugSpec, report: dict, code: int) -> dict:
    modules = [m["name"] for m in report["modules"]]
    introduced = [m["name"] for m in report["modules"] if m["origin"] == "introduced"]
    guilty = _guilty(spec, modules)
    extra = [m for m in introduced if m not in guilty and not any(_contains(m, g) for g in guilty)]
    first = report["first_divergence"]
    row = {
        "exit": code,
        "guilty_introduced": bool(guilty & set(introduced)),
        # A bug of the gradient reduction or the optimizer step touches every module it reaches
        # at once: "extra modules" cannot show for it; the phase of the first divergence can.
        "extra": None if spec.where.startswith("optimizer: ") else extra,
        "guilty_phase": first.get("phase") == spec.phase,
        "first": None,
        "shape": [],
        "hint": None,
    }
    if first.get("module") is not None:
        t = report["tensors"][first["tensor"]]
        row["first"] = f"it {first['iteration']} {first['phase']} {first['module']} {first['kind']}"
        row["shape"] = [s["summary"] for s in t.get("diagnosis", [])]
        row["hint"] = (t.get("hint") or {}).get("bug_class")
    return row


def verdict_holds(row: dict) -> bool:
    """Exit 1, the first divergence in the bug's phase, the guilty module introduced and at
    most one innocent module beside it (for module-level bugs)."""
    if "error" in row:
        return False
    extra_ok = row["extra"] is None or len(row["extra"]) <= 1
    return row["exit"] == 1 and row["guilty_phase"] and row["guilty_introduced"] and extra_ok
