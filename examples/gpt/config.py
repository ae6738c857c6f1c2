"""Model and run configuration of the example GPT."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class GPTConfig:
    vocab_size: int = 128
    hidden: int = 32
    layers: int = 4
    heads: int = 4
    kv_heads: int = 2
    ffn_hidden: int = 64
    seq_len: int = 16
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    # MoE: 0 experts means a dense MLP in every layer; otherwise every `moe_every`-th layer
    # (starting at layer 1) is a top-1 mixture of experts.
    num_experts: int = 0
    moe_every: int = 2
    precision: str = "fp32"  # fp32 | bf16 | bf16-autocast | fp8
    # How attention computes softmax(QK^T)V: "einsum" (explicit scores and torch.softmax) or
    # "sdpa" (torch's fused scaled_dot_product_attention). Both are correct; they round
    # differently, which is what a kernel change between two runs looks like.
    attention_kernel: str = "einsum"

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def describe(self) -> str:
        moe = f", experts {self.num_experts}" if self.num_experts else ""
        return f"examples.gpt (hidden {self.hidden}, layers {self.layers}{moe})"


@dataclass
class ParallelConfig:
    tp: int = 1
    pp: int = 1
    dp: int = 1
    cp: int = 1
    ep: int = 1
    sequence_parallel: bool = True
    dist_optimizer: bool = False
    # Names of deliberately injected bugs (see bugs.py); empty for a correct run.
    bugs: set[str] = field(default_factory=set)

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp * self.cp
