"""Bugs injected into Megatron-core's own code paths, by monkeypatching one function."""

from __future__ import annotations


def inject(name: str) -> None:
    if name == "none":
        return
    raise ValueError(f"unknown bug {name!r}")
