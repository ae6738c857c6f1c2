"""Canonical module names: identical in the reference and in every candidate rank.

Two rewrites make local module paths global:
- a numbered child whose module has an int ``layer_number`` (1-based, Megatron-LM's
  convention) is renamed to ``layer_number - 1``, so ``layers.0`` on pipeline stage 1 of a
  4-layer model becomes ``layers.2``;
- a numbered child below a module with ``local_expert_indices`` (Megatron-LM's MoE
  attribute) is renamed to its global expert id, so ``local_experts.0`` on expert-parallel
  rank 1 of 4 experts becomes ``local_experts.2``.
Modules in such an expert subtree are reported, because their tensors live whole on one rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

ROOT_NAME = "model"


@dataclass
class ModuleNames:
    """Canonical name of every module under one or more roots, plus expert membership."""

    names: dict[nn.Module, str] = field(default_factory=dict)
    experts: set[nn.Module] = field(default_factory=set)
    root_of: dict[nn.Module, int] = field(default_factory=dict)
    # nesting depth below the root (root = 0)
    nesting: dict[nn.Module, int] = field(default_factory=dict)

    def name(self, module: nn.Module) -> str:
        return self.names[module]


def canonical_names(roots: list[nn.Module]) -> ModuleNames:
    out = ModuleNames()
    for index, root in enumerate(roots):
        _visit(root, ROOT_NAME, [], False, out, index, 0)
    return out


def _visit(
    module: nn.Module,
    name: str,
    ancestors: list[nn.Module],
    in_expert: bool,
    out: ModuleNames,
    root_index: int,
    depth: int,
) -> None:
    if module in out.names:
        return  # shared module: keep its first name
    out.names[module] = name
    out.root_of[module] = root_index
    out.nesting[module] = depth
    if in_expert:
        out.experts.add(module)
    chain = [*ancestors, module]
    for child_name, child in module.named_children():
        part, expert = child_name, in_expert
        if child_name.isdigit():
            layer_number = getattr(child, "layer_number", None)
            # The expert list is a child of (or is) the module holding local_expert_indices.
            owner = next((m for m in chain[-2:] if hasattr(m, "local_expert_indices")), None)
            if isinstance(layer_number, int) and not isinstance(layer_number, bool):
                part = str(layer_number - 1)
            elif owner is not None:
                part = str(list(owner.local_expert_indices)[int(child_name)])
                expert = True
        child_full = part if name == ROOT_NAME else f"{name}.{part}"
        _visit(child, child_full, chain, expert, out, root_index, depth + 1)
