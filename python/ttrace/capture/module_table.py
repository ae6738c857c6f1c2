"""The manifest's module list: execution order and layer depth, merged over ranks.

Each rank sees only its own pipeline stage (and under VPP, several model chunks), so each
records the modules it ran in call order; rank 0 merges them stage by stage: model chunk c
on pipeline rank p runs at position c * pp + p. Depth is the number of transformer layers
between the model input and the module: ``layers.<n>.*`` is at depth n + 1, modules that
run before the first layer at 0, modules after the last layer at (number of layers) + 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

# `layers.3@call1`, `layers.3@recompute`: another call of a layer is at the layer's depth
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.|@|$)")


@dataclass
class ModuleTable:
    # (name, type, model chunk) in first-call order on this rank
    entries: list[tuple[str, str, int]] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    # module -> the compiled block it runs inside (captured at the block's boundary only)
    compiled_in: dict[str, str] = field(default_factory=dict)
    # stage container (`pipeline_stages`) -> what it holds, per model chunk on this rank
    holds: dict[str, dict[int, str]] = field(default_factory=dict)

    def record_container(self, name: str, type_name: str, chunk: int, holds: str) -> None:
        self.record(name, type_name, chunk)
        self.holds.setdefault(name, {})[chunk] = holds

    def record(self, name: str, type_name: str, chunk: int, compiled_in: str = "") -> None:
        if name not in self._seen:
            self._seen.add(name)
            self.entries.append((name, type_name, chunk))
            if compiled_in:
                self.compiled_in[name] = compiled_in

    def export(self, pp_rank: int, pp: int) -> list[tuple[int, int, str, str, str, str]]:
        """Picklable rows (stage position, local order, name, type, compiled block, what a
        stage container holds here) for gathering."""
        return [
            (c * pp + pp_rank, i, n, t, self.compiled_in.get(n, ""), self._slices(n, pp_rank))
            for i, (n, t, c) in enumerate(self.entries)
        ]

    def _slices(self, name: str, pp_rank: int) -> str:
        chunks = self.holds.get(name, {})
        if len(chunks) == 1 and 0 in chunks:
            return f"pp {pp_rank}: {chunks[0]}"
        return "; ".join(f"pp {pp_rank} chunk {c}: {h}" for c, h in sorted(chunks.items()))


def layer_of(name: str) -> int | None:
    m = _LAYER.search(name)
    return int(m.group(1)) if m else None


def merge_tables(rows_per_rank: list[list[tuple]]) -> list[dict[str, Any]]:
    best: dict[str, tuple[int, int, str]] = {}
    compiled: dict[str, str] = {}
    slices: dict[str, set[str]] = {}
    for rows in rows_per_rank:
        for stage, order, name, type_name, *extra in rows:
            key = (stage, order)
            if name not in best or key < best[name][:2]:
                best[name] = (stage, order, type_name)
            if extra and extra[0]:
                compiled[name] = extra[0]
            if len(extra) > 1 and extra[1]:
                # Data- and tensor-parallel copies of a stage hold the same slice.
                slices.setdefault(name, set()).update(extra[1].split("; "))
    ordered = sorted(best.items(), key=lambda kv: kv[1][:2])
    layers = [layer_of(n) for n, _ in ordered]
    known = [x for x in layers if x is not None]
    after = (max(known) + 2) if known else 0
    out: list[dict[str, Any]] = []
    seen_layer = False
    for order, ((name, (_, _, type_name)), layer) in enumerate(zip(ordered, layers, strict=True)):
        if layer is not None:
            seen_layer = True
            depth = layer + 1
        else:
            depth = after if seen_layer else 0
        entry: dict[str, Any] = {"name": name, "order": order, "depth": depth, "type": type_name}
        if name in compiled:
            entry["compiled_in"] = compiled[name]
        if name in slices:
            entry["stage_slices"] = "; ".join(sorted(slices[name]))
        out.append(entry)
    return out
