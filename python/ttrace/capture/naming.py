"""Canonical module names: identical in the reference and in every candidate rank.

Two rewrites make local module paths global:
- a numbered child whose module has an int ``layer_number`` (1-based, Megatron-LM's
  convention) is renamed to ``layer_number - 1``, so ``layers.0`` on pipeline stage 1 of a
  4-layer model becomes ``layers.2``;
- an expert of an experts container's `local_experts` list is renamed to its global expert
  id, read from the framework (`expert_groups.global_expert_ids`), so ``local_experts.0`` on
  expert-parallel rank 1 of 4 experts becomes ``local_experts.2``.
Modules in such an expert subtree are reported with their container, whose process groups
(expert tensor and data parallel) place their tensors.

The root is named ``model`` and its children are not prefixed (``layers.0``), except when the
root itself has a child called ``model`` (Hugging Face's ``LlamaForCausalLM.model``): that
child keeps ``model`` (``model.layers.0``, as in the checkpoint) and the root is named
``root``, so no two modules share a name. A root wrapped in `DistributedDataParallel` is
named through the wrapped module (``DDP(m).module`` adds no ``module.`` prefix; the same
for Megatron-core's `DistributedDataParallel` and `Float16Module`). A block compiled with
``torch.compile(block)`` is an `OptimizedModule` holding the block as ``_orig_mod``: both
carry the block's name (``_orig_mod`` adds no name part), as in an uncompiled reference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from .compiled_regions import ORIG_MOD, is_optimized_module
from .expert_groups import global_expert_ids, is_expert_list

ROOT_NAME = "model"
ROOT_FALLBACK = "root"


@dataclass
class ModuleNames:
    """Canonical name of every module under one or more roots, plus expert membership."""

    names: dict[nn.Module, str] = field(default_factory=dict)
    experts: set[nn.Module] = field(default_factory=set)
    # every module of an expert subtree -> the experts container whose list holds it
    expert_container: dict[nn.Module, nn.Module] = field(default_factory=dict)
    # the expert (the list's entry) of every module of an expert subtree, and its global id
    expert_root: dict[nn.Module, nn.Module] = field(default_factory=dict)
    expert_id: dict[nn.Module, int] = field(default_factory=dict)
    root_of: dict[nn.Module, int] = field(default_factory=dict)
    # nesting depth below the root (root = 0)
    nesting: dict[nn.Module, int] = field(default_factory=dict)
    # the attribute path below the root (`model.get_submodule(path)`), for fix-it hints
    paths: dict[nn.Module, str] = field(default_factory=dict)

    def name(self, module: nn.Module) -> str:
        return self.names[module]

    def is_root(self, module: nn.Module) -> bool:
        return self.nesting.get(module) == 0


def root_name(root: nn.Module) -> str:
    """`model`, unless the root has a child of that name (then `root`)."""
    children = {name for name, _ in root.named_children()}
    return ROOT_FALLBACK if ROOT_NAME in children else ROOT_NAME


def unwrap(root: nn.Module) -> nn.Module:
    """The module a data-parallel wrapper holds (DDP, DataParallel): names and hooks go on it,
    so the candidate's names match an unwrapped reference."""
    from torch.nn.parallel import DataParallel, DistributedDataParallel

    while isinstance(root, DistributedDataParallel | DataParallel) or _megatron_wrapper(root):
        root = root.module
    return root


def _megatron_wrapper(module: nn.Module) -> bool:
    """Megatron-core's `DistributedDataParallel` (it keeps a `ddp_config`) and `Float16Module`
    (casts inputs and outputs around the module it holds), recognized without importing it."""
    inner = getattr(module, "module", None)
    if not isinstance(inner, nn.Module):
        return False
    name = type(module).__name__
    return (name == "DistributedDataParallel" and hasattr(module, "ddp_config")) or (
        name == "Float16Module"
    )


def canonical_names(roots: list[nn.Module]) -> ModuleNames:
    out = ModuleNames()
    for index, root in enumerate(roots):
        _visit(root, root_name(root), [], None, out, index, 0)
        for path, module in root.named_modules():
            out.paths.setdefault(module, path)
    return out


def _visit(
    module: nn.Module,
    name: str,
    ancestors: list[nn.Module],
    expert: tuple[nn.Module, nn.Module] | None,
    out: ModuleNames,
    root_index: int,
    depth: int,
) -> None:
    """`expert`: (container, expert) when `module` is in an expert subtree."""
    if module in out.names:
        return  # shared module: keep its first name
    out.names[module] = name
    out.root_of[module] = root_index
    out.nesting[module] = depth
    if expert is not None:
        out.experts.add(module)
        out.expert_container[module], out.expert_root[module] = expert
    chain = [*ancestors, module]
    parent = ancestors[-1] if ancestors else None
    expert_ids = global_expert_ids(chain, name) if is_expert_list(parent, module) else None
    for child_name, child in module.named_children():
        part, inner = child_name, expert
        if child_name.isdigit():
            layer_number = getattr(child, "layer_number", None)
            if expert_ids is not None:
                out.expert_id[child] = expert_ids[int(child_name)]
                part, inner = str(out.expert_id[child]), (parent, child)
            elif isinstance(layer_number, int) and not isinstance(layer_number, bool):
                part = str(layer_number - 1)
        child_full = part if depth == 0 else f"{name}.{part}"
        if child_name == ORIG_MOD and is_optimized_module(module):
            child_full = name
        _visit(child, child_full, chain, inner, out, root_index, depth + 1)
