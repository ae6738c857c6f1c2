"""Layouts of Megatron-core's own module types, recognized by class name and attributes
without importing Megatron (Megatron-core 0.16: `megatron.core.transformer`,
`megatron.core.tensor_parallel`, `megatron.core.models`).

Attention keeps heads on a dimension of its own, which no hidden-size rule finds:
- `DotProductAttention` (and Transformer Engine's `TEDotProductAttention`): query, key and
  value ``[s, b, np, hn]`` with heads split over tp on dimension 2; the mask whole; the
  output ``[s, b, np * hn]`` split on the last dimension;
- `FusedScaleMaskSoftmax`: scores and probabilities ``[b, np, s, s]``, heads on dimension 1;
- any other 4-d activation of a Megatron model that nothing else placed (`IdentityOp`
  q/k layernorms, dropout on the probabilities): heads where the local size times tp is a
  head count of the model's `TransformerConfig` (dimension 2 for ``[s, b, np, hn]``,
  dimension 1 when the last two dimensions are equal, ``[b, np, s, s]``).
Embeddings and the model:
- `LanguageModelEmbedding`: ids and positions ``[b, s]`` in; output ``[s, b, h]``,
  sequence-split when `config.sequence_parallel` (it scatters inside, with no parallel
  attribute of its own);
- `VocabParallelEmbedding`: output ``[b, s, h]`` reduced (batch first), or ``[s/tp, b, h]``
  reduce-scattered with `reduce_scatter_embeddings`;
- `GPTModel` (and any model with `output_layer` and `compute_language_model_loss`): ids,
  positions in ``[b, s]``; the output is the per-token loss ``[b, s]`` (reduced over tp
  by the vocab-parallel cross entropy) or, without labels, logits ``[b, s, v/tp]``.
- `MultiTokenPredictionBlock` and `MultiTokenPredictionLayer` (multi-token prediction): ids,
  positions and padding mask in ``[b, s]`` (the first two positional arguments, or by name);
  a layer hands them on, rolled, as its outputs 1 to 3.
Mixture of experts (`MoELayer`: a router, a token dispatcher, experts; `TopKRouter`):
- the layer's hidden states in and out ``[s, b, h]``, sequence-split under sequence
  parallelism; the router's input alike, its padding mask ``[s, b]`` (position 1);
- a `padding_mask` keyword of any module below the model ``[b, s]`` (the model scatters it
  along the sequence under sequence parallelism);
- router outputs and expert activations (rows are tokens): `token_routing`.
Skip-bias-add outputs (position 1 of a linear with `skip_bias_add`): a row-parallel bias is a
replica whose gradient, under sequence parallelism, sums only this rank's tokens
(`gradsum`); a column-parallel bias is split like the weight's rows.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import nn

from .layout import Layout

HEADS_BY_NAME = {
    "DotProductAttention": "core",
    "TEDotProductAttention": "core",
    "FusedScaleMaskSoftmax": "softmax",
}


MTP_TYPES = ("MultiTokenPredictionBlock", "MultiTokenPredictionLayer")
BATCH_FIRST_ARGS = ("input_ids", "position_ids", "padding_mask")


def is_megatron(module: nn.Module) -> bool:
    return type(module).__module__.startswith("megatron.")


def _index(index: int | str) -> int:
    return int(index) if str(index).lstrip("-").isdigit() else -1


class MegatronRules:
    def __init__(self, modules: Iterable[nn.Module], tp: int) -> None:
        self.tp = tp
        self.heads: set[int] = set()
        self.active = False
        for m in modules:
            if not is_megatron(m):
                continue
            self.active = True
            config = getattr(m, "config", None)
            for attr in ("num_attention_heads", "num_query_groups"):
                n = getattr(config, attr, None)
                if isinstance(n, int) and n > 0:
                    self.heads.add(n)

    def decide(
        self, module: nn.Module, direction: str, index: int | str, ndim: int | None
    ) -> Layout | None:
        """The layout of forward input/output `index` of a Megatron module type, or None."""
        if not self.active:
            return None
        name = type(module).__name__
        i = _index(index)
        kind = HEADS_BY_NAME.get(name)
        if kind == "core":
            if direction == "out":
                return Layout("last")
            heads = i in (0, 1, 2) and ndim in (4, None)
            return Layout("split", dim=2) if heads else Layout("replica")
        if kind == "softmax":
            return Layout("split", "bs", 1) if i <= 0 else Layout("replica")
        if name == "LanguageModelEmbedding" or name == "VocabParallelEmbedding":
            return self._embedding(module, direction)
        if name in MTP_TYPES:
            return self._mtp(name, direction, index)
        if hasattr(module, "output_layer") and hasattr(module, "compute_language_model_loss"):
            if direction == "in" or ndim == 2:
                return Layout("replica", "bs")
            return Layout("last", "bs")
        moe = self._moe(module, direction, index, i)
        if moe is not None:
            return moe
        if direction == "out" and i == 1 and getattr(module, "skip_bias_add", False):
            return self._returned_bias(module)
        return None

    def _moe(self, module: nn.Module, direction: str, index: int | str, i: int) -> Layout | None:
        config = getattr(module, "config", None)
        sp = bool(getattr(config, "sequence_parallel", False)) and self.tp > 1
        tokens = Layout("seq" if sp else "replica")
        if direction == "in" and str(index) == "padding_mask":
            return Layout(tokens.mode, "bs")
        router = hasattr(module, "routing") and hasattr(module, "gating")
        if router and direction == "in":
            return tokens if i == 0 else Layout(tokens.mode, "sb")
        layer = hasattr(module, "router") and hasattr(module, "token_dispatcher")
        if layer and (i == 0 or index == "hidden_states"):
            return tokens
        return None

    def _embedding(self, module: nn.Module, direction: str) -> Layout:
        if direction == "in":
            return Layout("replica", "bs")
        config = getattr(module, "config", None)
        if type(module).__name__ == "VocabParallelEmbedding":
            scatter = bool(getattr(module, "reduce_scatter_embeddings", False))
            return Layout("seq") if scatter else Layout("replica", "bs")
        sp = bool(getattr(config, "sequence_parallel", False)) and self.tp > 1
        scatter = getattr(module, "scatter_to_sequence_parallel", True)
        return Layout("seq" if sp and scatter else "replica")

    def _mtp(self, name: str, direction: str, index: int | str) -> Layout | None:
        """Token ids, positions and padding mask of multi-token prediction: ``[b, s]``."""
        i = _index(index)
        if direction == "in" and (index in BATCH_FIRST_ARGS or i in (0, 1)):
            return Layout("replica", "bs")
        if direction == "out" and name == "MultiTokenPredictionLayer" and i in (1, 2, 3):
            return Layout("replica", "bs")
        return None

    def _returned_bias(self, module: nn.Module) -> Layout:
        weight = getattr(module, "weight", None)
        if getattr(weight, "partition_dim", None) == 0:
            return Layout("replica" if getattr(module, "gather_output", False) else "last")
        sp = bool(getattr(module, "sequence_parallel", False))
        return Layout("gradsum" if sp else "replica")

    def heads_layout(self, tensor: torch.Tensor | None) -> Layout | None:
        """Heads of a 4-d activation nothing else placed, from the model's head counts."""
        if not self.active or self.tp == 1 or tensor is None or tensor.dim() != 4:
            return None
        shape = tuple(tensor.shape)
        if shape[2] == shape[3] and shape[1] * self.tp in self.heads:
            return Layout("split", "bs", 1)  # [b, np, s, s]
        if shape[2] * self.tp in self.heads:
            return Layout("split", dim=2)  # [s, b, np, hn]
        return None
