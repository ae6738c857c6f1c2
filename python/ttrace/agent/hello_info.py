"""The `hello` reply: the job, its bundles, and every captured module with whether it can
be replayed (merged over ranks: a module is replayable when every rank that ran it can)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .wire import AGENT, PROTOCOL


def merge_summaries(summaries: list[dict[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for summary in summaries:
        for name, why in summary.items():
            if not merged.get(name):
                merged[name] = why
    return merged


def hello_info(
    bundle: Path, reference: Path, world_size: int, why: dict[str, str]
) -> dict[str, Any]:
    manifest = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    modules = []
    for m in manifest.get("modules", []):
        reason = why.get(m["name"], "no call of this module was recorded")
        modules.append(
            {"name": m["name"], "type": m.get("type", ""), "replayable": not reason, "why": reason}
        )
    return {
        "agent": AGENT,
        "protocol": PROTOCOL,
        "world_size": world_size,
        "parallel": manifest.get("parallel", {}),
        "role": manifest.get("role", ""),
        "precision": manifest.get("precision", ""),
        "bundle": str(bundle.resolve()),
        "reference": str(reference.resolve()),
        "iterations": manifest.get("iterations", []),
        "micro_batches": manifest.get("micro_batches", 0),
        "modules": modules,
    }
