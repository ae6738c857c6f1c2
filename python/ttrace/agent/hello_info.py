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


def bundle_identity(manifest: dict[str, Any]) -> dict[str, str]:
    """Which capture a bundle holds, as a client compares it with the bundle it shows: the
    capture's id (older bundles: none) and the manifest's creation time."""
    return {
        "capture_id": str(manifest.get("capture_id", "")),
        "created": str(manifest.get("created", "")),
    }


def _manifest(bundle: Path) -> dict[str, Any]:
    return json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))


def hello_info(
    bundle: Path, reference: Path, world_size: int, why: dict[str, str]
) -> dict[str, Any]:
    manifest = _manifest(bundle)
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
        "identity": {
            "candidate": bundle_identity(manifest),
            "reference": bundle_identity(_manifest(reference)),
        },
        "iterations": manifest.get("iterations", []),
        "micro_batches": manifest.get("micro_batches", 0),
        "modules": modules,
    }
