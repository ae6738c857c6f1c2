"""A tiny Llama-style transformer written the way PyTorch's tensor-parallel tutorial writes
it (batch-first activations, `nn.RMSNorm`, fused-free attention and SwiGLU MLP)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .common import FFN, HEADS, HIDDEN, LAYERS, VOCAB


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.head_dim = HIDDEN // HEADS
        self.wq = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.wk = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.wv = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.wo = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        # -1 heads: a tensor-parallel rank holds its share of the heads
        q, k, v = (
            w(x).view(b, s, -1, self.head_dim).transpose(1, 2) for w in (self.wq, self.wk, self.wv)
        )
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(o.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Linear(HIDDEN, FFN, bias=False)
        self.w3 = nn.Linear(HIDDEN, FFN, bias=False)
        self.act = nn.SiLU()
        self.w2 = nn.Linear(FFN, HIDDEN, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(self.act(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(HIDDEN)
        self.attention = Attention()
        self.ffn_norm = nn.RMSNorm(HIDDEN)
        self.feed_forward = FeedForward()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, HIDDEN)
        self.layers = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = nn.RMSNorm(HIDDEN)
        self.output = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h))
