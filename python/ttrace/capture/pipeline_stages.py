"""What each pipeline stage holds, read from the job's modules.

A pipeline stage (and, interleaved, each of its model chunks) holds a slice of the model's
layers. Layers carry their global names (`naming`: Megatron's `layer_number`, or the global
key of a layer list), so they compare with the reference's layers one for one. The modules
that hold a stage's slice (Megatron's `TransformerBlock` `decoder`, a stage's layer list)
exist once per stage under one name, but each holds other layers: their activations are not
the reference module's (stage 0's `decoder` outputs layer 1's output, the reference's
outputs the final norm's). They are *stage containers*: their activations are not captured,
and the manifest lists what each stage's copy holds (`stage_slices`), so the comparison
leaves the reference's activations of that module out with a note, never merging the
stages' copies as replicas. Their parameters and those of every module inside are captured
as usual.

What a chunk receives from the previous stage and hands to the next is captured by
`pipeline_handoff`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torch import nn

from .naming import ModuleNames

# A layer: `layers.<n>` (global number) as the last part of a canonical name.
_LAYER = re.compile(r"^(?P<prefix>(?:.*\.)?layers\.)(?P<n>\d+)$")


@dataclass
class ChunkLayers:
    """The layers one model chunk holds: their name prefix (`decoder.layers.`) and global
    numbers, with the module of each."""

    prefix: str = ""
    layers: dict[int, nn.Module] = field(default_factory=dict)

    @property
    def first(self) -> int | None:
        return min(self.layers) if self.layers else None

    @property
    def last(self) -> int | None:
        return max(self.layers) if self.layers else None

    def name(self, number: int) -> str:
        return f"{self.prefix}{number}"


def layer_number(name: str) -> tuple[str, int] | None:
    """(prefix, global number) of a layer's canonical name, else None."""
    m = _LAYER.match(name)
    return (m.group("prefix"), int(m.group("n"))) if m else None


def chunk_layers(names: ModuleNames, chunk: int) -> ChunkLayers:
    out = ChunkLayers()
    for module, name in names.names.items():
        if names.root_of.get(module) != chunk:
            continue
        found = layer_number(name)
        if found is not None:
            out.prefix = found[0]
            out.layers[found[1]] = module
    return out


def describe(numbers: list[int]) -> str:
    """`layers 0-1`, `layers 2`, `layers 0-1, 4-5`."""
    parts: list[str] = []
    for n in sorted(numbers):
        if parts and parts[-1][1] == n - 1:
            parts[-1] = (parts[-1][0], n)
        else:
            parts.append((n, n))
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in parts)
    return f"layers {text}" if text else "no layers"


def stage_containers(names: ModuleNames, pipelined: bool) -> dict[nn.Module, str]:
    """Stage containers of a pipelined job (none otherwise), each with what it holds on this
    rank: every module other than a root that holds layers and is not inside one."""
    if not pipelined:
        return {}
    # (chunk, ancestor name) -> the layer numbers below it; names inside a layer
    held: dict[tuple[int, str], list[int]] = {}
    inside: set[str] = set()
    for module, name in names.names.items():
        found = layer_number(name)
        if found is None:
            continue
        chunk = names.root_of.get(module, 0)
        parts = name.split(".")
        for end in range(1, len(parts)):
            held.setdefault((chunk, ".".join(parts[:end])), []).append(found[1])
        inside.add(f"{name}.")
    out: dict[nn.Module, str] = {}
    for module, name in names.names.items():
        numbers = held.get((names.root_of.get(module, 0), name))
        if not numbers or names.is_root(module) or layer_number(name) is not None:
            continue
        if not any(name.startswith(prefix) for prefix in inside):
            out[module] = describe(numbers)
    return out
