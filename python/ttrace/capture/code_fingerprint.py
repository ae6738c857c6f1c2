"""A fingerprint of the code a job runs: the script, the source files of the model's module
classes, and the versions of Python, torch, ttrace and the frameworks those classes come
from.

The capture records it in the bundle; a relaunch by `ttrace serve` computes it again and
the agent says what changed before any verdict, since a replay judges the code it runs, not
the code that was captured. Files are keyed by Python module name (`examples.gpt.layers.norm`),
not by path, so a checkout at another path on another host compares equal.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import platform
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .._version import __version__

SCRIPT = "__main__"


def _sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _classes(roots: Iterable[nn.Module]) -> set[type]:
    """Every class in the MRO of every module, up to torch's own."""
    out: set[type] = set()
    for root in roots:
        for module in root.modules():
            for cls in type(module).__mro__:
                if cls.__module__.split(".")[0] not in ("torch", "builtins", "typing"):
                    out.add(cls)
    return out


def _framework_versions(top_levels: Iterable[str]) -> dict[str, str]:
    dists = importlib.metadata.packages_distributions()
    out: dict[str, str] = {}
    for top in sorted(set(top_levels)):
        for dist in dists.get(top, []):
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    return out


def module_files(roots: Iterable[nn.Module]) -> dict[str, dict[str, str]]:
    """{python module: {"file", "sha256"}} of the model's classes (and of the script)."""
    files: dict[str, dict[str, str]] = {}
    for cls in _classes(roots):
        name = cls.__module__
        if name in files:
            continue
        try:
            path = inspect.getsourcefile(cls)
        except (TypeError, OSError):
            path = None
        digest = _sha256(path) if path else None
        if path and digest:
            files[name] = {"file": path, "sha256": digest}
    main = sys.modules.get("__main__")
    main_spec = getattr(main, "__spec__", None)
    main_file = getattr(main, "__file__", None)
    if main_file and _sha256(main_file):
        key = main_spec.name if main_spec is not None else SCRIPT
        files[key] = {"file": str(main_file), "sha256": _sha256(main_file) or ""}
    return dict(sorted(files.items()))


def code_fingerprint(roots: Iterable[nn.Module]) -> dict[str, Any]:
    roots = list(roots)
    files = module_files(roots)
    return {
        "files": files,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "ttrace": __version__,
            **_framework_versions(n.split(".")[0] for n in files),
        },
    }


def merge_fingerprints(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """One fingerprint of every rank's (pipeline stages hold different classes)."""
    files: dict[str, Any] = {}
    versions: dict[str, str] = {}
    for part in parts:
        if part:
            files.update(part.get("files", {}))
            versions.update(part.get("versions", {}))
    return {"files": dict(sorted(files.items())), "versions": dict(sorted(versions.items()))}


def code_changes(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs between the captured job's fingerprint and this one, one line each."""
    changes: list[str] = []
    old_files, new_files = recorded.get("files", {}), current.get("files", {})
    for name in sorted(set(old_files) | set(new_files)):
        old, new = old_files.get(name), new_files.get(name)
        if old is None:
            changes.append(f"{name}: not in the captured job ({new['file']})")
        elif new is None:
            changes.append(f"{name}: in the captured job ({old['file']}), not in this one")
        elif old["sha256"] != new["sha256"]:
            changes.append(
                f"{name}: {new['file']} changed since capture "
                f"(sha256 {old['sha256'][:12]} -> {new['sha256'][:12]})"
            )
    old_v, new_v = recorded.get("versions", {}), current.get("versions", {})
    for name in sorted(set(old_v) | set(new_v)):
        if old_v.get(name) != new_v.get(name):
            changes.append(
                f"{name} version: {old_v.get(name, 'absent')} at capture, "
                f"{new_v.get(name, 'absent')} now"
            )
    return changes
