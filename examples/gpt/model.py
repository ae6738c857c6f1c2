"""One pipeline stage of the GPT: the embedding on the first stage, a contiguous range of
layers, and the final norm, output layer and loss on the last stage. With tied embeddings
the output layer's weight is the embedding's (a copy on the last stage under pipeline
parallelism)."""

from __future__ import annotations

import torch
from torch import nn

import ttrace.capture as ttc

from .config import GPTConfig
from .layers.column_linear import ColumnParallelLinear
from .layers.context import LayerContext
from .layers.cross_entropy import VocabParallelCrossEntropy
from .layers.embedding import VocabParallelEmbedding
from .layers.norm import RMSNorm
from .layers.transformer_layer import TransformerLayer


class GPTStage(nn.Module):
    def __init__(
        self,
        cfg: GPTConfig,
        ctx: LayerContext,
        pp_rank: int = 0,
        pp_size: int = 1,
        tie_embeddings: bool = False,
    ) -> None:
        super().__init__()
        if cfg.layers % pp_size:
            raise ValueError(f"{cfg.layers} layers not divisible by pp {pp_size}")
        per = cfg.layers // pp_size
        first = pp_rank * per
        self.is_first = pp_rank == 0
        self.is_last = pp_rank == pp_size - 1
        if self.is_first:
            self.embedding = VocabParallelEmbedding(cfg.vocab_size, cfg.hidden, ctx)
        self.layers = nn.ModuleList(
            TransformerLayer(cfg, ctx, layer_number=first + i + 1) for i in range(per)
        )
        if self.is_last:
            self.final_layernorm = RMSNorm(cfg.hidden, ctx, cfg.norm_eps)
            self.output_layer = ColumnParallelLinear(cfg.hidden, cfg.vocab_size, ctx)
            self.loss = VocabParallelCrossEntropy(cfg.vocab_size, ctx)
        if tie_embeddings:
            self._tie(pp_size)

    def _tie(self, pp_size: int) -> None:
        """Tied embedding / output weight (Megatron's share_embeddings_and_output_weights).
        One stage: the output layer uses the embedding's parameter (its grad is the lookup
        grad plus the head grad). Under pipeline parallelism the last stage holds a copy
        (Megatron's `word_embeddings_for_head`), seeded and captured as `embedding.weight`;
        finalize_grads all-reduces the two copies' grads over the embedding group."""
        if self.is_first and self.is_last:
            self.output_layer.weight = self.embedding.weight
            return
        if self.is_first:
            self.embedding.weight.shared_embedding = True
        if self.is_last and pp_size > 1:
            w = self.output_layer.weight
            w.shared = True  # counted once, on the first stage (grad-norm clipping)
            w.shared_embedding = True
            ttc.annotate(w, alias="embedding.weight", partial_over="pp")

    def forward(self, x: torch.Tensor, labels: torch.Tensor | None = None) -> torch.Tensor:
        """First stage: x = token ids [b, s]; others: hidden [s, b, h] from the previous stage.
        Last stage returns the per-token loss [s, b]; others their hidden output."""
        if self.is_first:
            x = self.embedding(x)
        for layer in self.layers:
            x = layer(x)
        if not self.is_last:
            return x
        logits = self.output_layer(self.final_layernorm(x))
        return self.loss(logits, labels.transpose(0, 1).contiguous())
