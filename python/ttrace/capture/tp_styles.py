"""Tensor-parallel styles applied by PyTorch's `parallelize_module` or by Hugging Face
transformers' `tp_plan`, read back from a module so that its *local* inputs and outputs get
a layout without annotations.

What the hooks of ttrace see:
- torch (`torch.distributed.tensor.parallel`): the style's input function is a forward
  pre-hook registered before ttrace's, so ttrace sees its DTensor inputs (placed by the
  DTensor itself); its output function is a forward hook that runs before ttrace's and, with
  `use_local_output=True` (the default of `ColwiseParallel`/`RowwiseParallel`), hands ttrace
  the local shard of `output_layouts`. The layouts are read from the hook closures
  (`functools.partial(style._prepare_output_fn, output_layouts, use_local_output)` and
  `PrepareModuleOutput` instances).
- transformers (`apply_tensor_parallelism`): the style wraps `module.forward`
  (`tp_forward` closes over the style), so ttrace sees the local input before the style
  converts it and the local output after: inputs follow `input_layouts`, outputs
  `output_layouts`.
- anything else whose weight is a DTensor (a style ttrace cannot read): a weight `Shard(0)`
  on a linear layer is column-parallel (output split on the last dimension), `Shard(1)`
  row-parallel (input split on the last dimension, output reduced).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

from torch import nn

from .dtensor_placement import is_dtensor
from .layout import Layout


@dataclass(frozen=True)
class StyleLayouts:
    """Layouts of the local tensors ttrace's hooks see at position 0 (None: unknown, or a
    DTensor that places itself), and where they were read from."""

    inputs: Layout | None
    outputs: Layout | None
    source: str


def placement_layout(placement: Any) -> Layout | None:
    """A DTensor placement over the tensor-parallel mesh as a layout."""
    name = type(placement).__name__
    if name == "Replicate":
        return Layout("replica")
    if name == "Partial":
        return Layout("sum")
    if name in ("Shard", "_StridedShard"):
        return Layout("split", dim=int(placement.dim))
    return None


def _first(layouts: Any) -> Any:
    if isinstance(layouts, tuple | list):
        return layouts[0] if layouts else None
    return layouts


def _cells(fn: Any) -> list[Any]:
    try:
        return [c.cell_contents for c in (getattr(fn, "__closure__", None) or ())]
    except ValueError:  # an empty cell
        return []


def _torch_sequence_sharding(module: nn.Module) -> Layout | None:
    """The `Shard(sequence_dim)` a torch `SequenceParallel` input hook converts to."""
    for hook in list(module._forward_pre_hooks.values()):
        for cell in _cells(hook):
            if isinstance(cell, functools.partial) and cell.args:
                qual = getattr(cell.func, "__qualname__", "")
                if qual == "SequenceParallel._prepare_input_fn":
                    return placement_layout(_first(cell.args[0]))
    return None


def _torch_input(module: nn.Module) -> Layout | None:
    """The local first input a torch `PrepareModuleInput(use_local_output=True)` hands
    the module: its `desired_input_layouts[0]` (a DTensor input, the default, places
    itself)."""
    for hook in list(module._forward_pre_hooks.values()):
        for cell in _cells(hook):
            if type(cell).__name__ != "PrepareModuleInput":
                continue
            if getattr(cell, "use_local_output", False):
                desired = _first(getattr(cell, "desired_input_layouts", None))
                if desired is not None:
                    return placement_layout(desired)
    return None


def _torch_output(module: nn.Module) -> StyleLayouts | None:
    for hook in list(module._forward_hooks.values()):
        for cell in _cells(hook):
            if isinstance(cell, functools.partial):
                qual = getattr(cell.func, "__qualname__", "")
                if not qual.endswith("._prepare_output_fn"):
                    continue
                style = qual.split(".")[0]
                if style in ("ColwiseParallel", "RowwiseParallel") and len(cell.args) >= 2:
                    layouts, local = cell.args[0], bool(cell.args[1])
                    out = placement_layout(_first(layouts)) if local else None
                    return StyleLayouts(None, out, f"torch {style}")
                if style == "SequenceParallel":
                    # A local output keeps the input's sequence sharding; a DTensor output
                    # (the default) places itself.
                    local = bool(cell.args[0]) if cell.args else False
                    out = _torch_sequence_sharding(module) if local else None
                    return StyleLayouts(None, out, "torch SequenceParallel")
            desired = getattr(cell, "desired_output_layouts", None)
            if desired is not None and getattr(cell, "use_local_output", False):
                out = placement_layout(_first(desired))
                return StyleLayouts(None, out, "torch PrepareModuleOutput")
    return None


def _hf_style(module: nn.Module) -> StyleLayouts | None:
    forward = module.__dict__.get("forward")
    if forward is None:
        return None
    for cell in _cells(forward):
        kind = type(cell).__name__
        mod = type(cell).__module__
        if not mod.startswith("transformers.") or not hasattr(cell, "transform_inputs_pre_forward"):
            continue
        local = bool(getattr(cell, "use_local_output", True))
        if kind in ("ColwiseParallel", "RowwiseParallel", "PackedColwiseParallel"):
            inp = placement_layout(getattr(cell, "input_layouts", None))
            out = placement_layout(getattr(cell, "output_layouts", None)) if local else None
            if kind == "PackedColwiseParallel":
                inp, out = Layout("replica"), Layout("split", dim=-1)
            return StyleLayouts(inp, out, f"transformers {kind}")
        if kind == "EmbeddingParallel":
            return StyleLayouts(Layout("replica", "bs"), Layout("replica"), f"transformers {kind}")
        if kind == "SequenceParallel":
            seq = Layout("split", dim=int(getattr(cell, "sequence_dim", 1)))
            return StyleLayouts(seq, seq if local else None, f"transformers {kind}")
        if kind in ("AllReduceParallel", "ReplicatedWithGradAllReduce"):
            return StyleLayouts(Layout("replica"), Layout("replica"), f"transformers {kind}")
    return None


def _weight_rule(module: nn.Module, data_parallel: set[int]) -> StyleLayouts | None:
    weight = getattr(module, "weight", None)
    if not is_dtensor(weight) or len(weight.placements) != 1 or id(weight) in data_parallel:
        return None  # FSDP2 (Shard(0) over dp) and 2-d meshes are placed by their DTensors
    shard = weight.placements[0]
    if type(shard).__name__ != "Shard" or weight.device_mesh.size() == 1:
        return None
    if isinstance(module, nn.Embedding):
        # vocabulary split (dim 0): partial lookups reduced; hidden split (dim 1): last dim.
        out = Layout("replica") if shard.dim == 0 else Layout("split", dim=-1)
        return StyleLayouts(Layout("replica", "bs"), out, "DTensor embedding weight")
    if shard.dim in (0, -2):
        return StyleLayouts(Layout("replica"), Layout("split", dim=-1), "DTensor weight Shard(0)")
    if shard.dim in (1, -1):
        return StyleLayouts(Layout("split", dim=-1), Layout("replica"), "DTensor weight Shard(1)")
    return None


def module_style(module: nn.Module, data_parallel: set[int]) -> StyleLayouts | None:
    """The layouts a tensor-parallel style gives this module's local tensors, if any.
    `data_parallel`: ids of parameters sharded by FSDP2 (their Shard(0) is over dp)."""
    found = _hf_style(module) or _torch_output(module) or _weight_rule(module, data_parallel)
    local_input = _torch_input(module)
    if local_input is None:
        return found
    if found is None:
        return StyleLayouts(local_input, None, "torch PrepareModuleInput")
    return dataclasses.replace(found, inputs=local_input)
