"""Recognize Megatron-style parallel layers by the attributes Megatron-LM sets, without
importing Megatron, and say how their inputs and outputs are laid out.

- vocab-parallel embedding: a module with ``vocab_start_index`` and a tensor-parallel weight;
  ids ``[b, s]`` in (whole over tp), output ``[s, b, h]`` reduced (or reduce-scattered along
  s with ``reduce_scatter_embeddings`` / ``sequence_parallel``);
- vocab-parallel cross entropy: ``vocab_start_index`` without a weight; logits split on the
  vocabulary (last dim) in, per-token loss out;
- column-parallel linear: weight ``partition_dim == 0``; input whole (or split on s under
  ``sequence_parallel``), output split on the last dim unless ``gather_output``;
- row-parallel linear: weight ``partition_dim == 1``; input split on the last dim, output
  reduced, reduce-scattered on s (``sequence_parallel``) or, with ``explicit_expert_comm`` /
  ``skip_reduce``, a partial sum;
- anything else with a ``sequence_parallel`` attribute (norms), or whose only hint is
  ``weight.sequence_parallel`` (the gradient-reduction mark Megatron-LM puts on norm
  weights): split on s when it is true;
- a plain ``nn.Embedding`` (replicated weight): ids ``[b, s]`` in, ``[b, s, h]`` out, both
  replicated over tp; with ``weight.sequence_parallel`` (an embedding outside sequence
  parallelism whose consumers each take their slice) the output's gradient is a partial
  sum over tp (``gradsum``).
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from .dtensor_placement import is_dtensor
from .layout import Layout

# (direction "in"/"out", position) -> Layout
Rule = Callable[[str, int], Layout]


def _tp_weight(module: nn.Module) -> nn.Parameter | None:
    w = getattr(module, "weight", None)
    if isinstance(w, nn.Parameter) and getattr(w, "tensor_model_parallel", False):
        return w
    return None


def layer_rule(module: nn.Module) -> Rule | None:
    sp = bool(getattr(module, "sequence_parallel", False))
    weight = _tp_weight(module)
    if hasattr(module, "vocab_start_index"):
        if weight is not None:
            scatter = bool(getattr(module, "reduce_scatter_embeddings", sp))
            out = Layout("seq" if scatter else "replica")
            return lambda d, i: Layout("replica", "bs") if d == "in" else out
        # cross entropy: logits (position 0) are split on the vocabulary
        return lambda d, i: Layout("last") if d == "in" and i == 0 else Layout("replica")
    if weight is not None:
        dim = getattr(weight, "partition_dim", None)
        if dim == 0:
            out = Layout("replica" if getattr(module, "gather_output", False) else "last")
            inp = Layout("seq" if sp else "replica")
            return lambda d, i: inp if d == "in" else out
        if dim == 1:
            partial = getattr(module, "explicit_expert_comm", False) or getattr(
                module, "skip_reduce", False
            )
            out = Layout("sum" if partial else ("seq" if sp else "replica"))
            return lambda d, i: Layout("last") if d == "in" else out
    if hasattr(module, "sequence_parallel"):
        layout = Layout("seq" if sp else "replica")
        return lambda d, i: layout
    weight_sp = getattr(getattr(module, "weight", None), "sequence_parallel", False)
    if type(module) is nn.Embedding and not is_dtensor(module.weight):
        # ids are [b, s] whatever the model's activation order; the output keeps it. A
        # weight marked for the sequence-parallel gradient all-reduce: each rank's consumers
        # used their own slice of the (replicated) output, so its gradient is partial.
        out = Layout("gradsum" if weight_sp else "replica", "bs")
        return lambda d, i: Layout("replica", "bs") if d == "in" else out
    if weight_sp:
        return lambda d, i: Layout("seq")
    return None
