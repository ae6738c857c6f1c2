"""Which modules to capture: names, glob patterns, or a nesting depth."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from torch import nn

from .naming import ModuleNames

_CONTAINERS = (nn.ModuleList, nn.ModuleDict)

ModuleSpec = None | int | str | Sequence[str]


def select_modules(names: ModuleNames, spec: ModuleSpec) -> list[nn.Module]:
    """`None`: every module except the roots and bare containers; an int: modules nested at
    most that deep (root children are depth 1); strings: canonical names or fnmatch patterns
    (``"layers.*.mlp"``); the root itself is ``"model"``."""
    chosen: list[nn.Module] = []
    for module, name in names.names.items():
        depth = names.nesting[module]
        if spec is None:
            ok = depth > 0 and not isinstance(module, _CONTAINERS)
        elif isinstance(spec, int) and not isinstance(spec, bool):
            ok = 0 < depth <= spec and not isinstance(module, _CONTAINERS)
        else:
            patterns = [spec] if isinstance(spec, str) else list(spec)
            ok = any(fnmatch.fnmatchcase(name, p) for p in patterns)
        if ok:
            chosen.append(module)
    return chosen
