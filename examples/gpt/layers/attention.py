"""Causal self-attention with RoPE and grouped-query attention; heads split over tensor
parallelism, sequence split over context parallelism (keys/values all-gathered)."""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import comm
from ..config import GPTConfig
from ..cp_layout import two_chunk_indices
from .column_linear import ColumnParallelLinear
from .context import LayerContext
from .rope import apply_rope, rope_tables
from .row_linear import RowParallelLinear

# einsum: scores and softmax in fp32 (Megatron's attention_softmax_in_fp32); softmax-lowp: the
# softmax in the activations' dtype (that flag off), which rounds more under bf16 and is the
# same computation under fp32; sdpa: torch's fused scaled_dot_product_attention; lowp-accumulate:
# probabilities times values summed key by key in the activations' dtype (a kernel with
# reduced-precision reductions, as cuBLAS's allow_bf16_reduced_precision_reduction allows).
# tf32: both products with inputs rounded to TF32 (10 mantissa bits), as tensor cores compute
# fp32 matmuls when torch.backends.cuda.matmul.allow_tf32 is set.
# bf16x3: both products as torch's float32_matmul_precision("high") may run them: each fp32
# operand split into two bf16 parts, three bf16 products summed in fp32 (about 16 mantissa
# bits instead of 24).
ATTENTION_KERNELS = ("einsum", "softmax-lowp", "sdpa", "lowp-accumulate", "tf32", "bf16x3")


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """fp32 rounded to nearest TF32 (the low 13 of 23 mantissa bits cleared); gradients pass
    through unchanged, as a tensor core's backward matmuls are TF32 products of their own."""
    if x.dtype != torch.float32:
        return x
    bits = x.detach().view(torch.int32)
    rounded = ((bits + 0x1000) & ~0x1FFF).view(torch.float32)
    return x + (rounded - x).detach()


def _bf16_part(x: torch.Tensor) -> torch.Tensor:
    return x.detach().to(torch.bfloat16).to(torch.float32)


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig, ctx: LayerContext) -> None:
        super().__init__()
        if cfg.heads % cfg.kv_heads or cfg.kv_heads % ctx.tp_size:
            raise ValueError("heads must divide into kv groups and kv groups over tp")
        self.ctx = ctx
        self.kernel = cfg.attention_kernel
        if self.kernel not in ATTENTION_KERNELS:
            raise ValueError(f"attention kernel {self.kernel!r} is not one of {ATTENTION_KERNELS}")
        # The kernel tag a capture records per module (docs/bundle-format.md, `environment`):
        # a comparison of runs with different tags may call this module's rounding drift.
        self.ttrace_kernel = f"attention={self.kernel}"
        self.head_dim = cfg.head_dim
        self.groups_local = cfg.kv_heads // ctx.tp_size
        self.q_per_group = cfg.heads // cfg.kv_heads
        # qkv weight rows are ordered per kv group [q heads of g, k of g, v of g] so that a
        # contiguous split over tp hands each rank whole groups (Megatron's layout).
        qkv_out = cfg.kv_heads * (self.q_per_group + 2) * cfg.head_dim
        self.linear_qkv = ColumnParallelLinear(cfg.hidden, qkv_out, ctx)
        self.linear_proj = RowParallelLinear(cfg.heads * cfg.head_dim, cfg.hidden, ctx)
        # Global positions of this rank's tokens, and the order that puts all-gathered keys
        # back in sequence order.
        pos = two_chunk_indices(cfg.seq_len, ctx.cp_rank, ctx.cp_size)
        if ctx.has_bug("rope-cp-offset"):
            # Bug zoo: rotary positions as if this rank held one contiguous chunk, while the
            # data uses the load-balanced two-chunk layout (the causal mask stays right).
            rope_pos = torch.arange(len(pos)) + ctx.cp_rank * len(pos)
        else:
            rope_pos = pos
        gathered = torch.cat(
            [two_chunk_indices(cfg.seq_len, r, ctx.cp_size) for r in range(ctx.cp_size)]
        )
        self.register_buffer("positions", pos, persistent=False)
        self.register_buffer("key_order", torch.argsort(gathered), persistent=False)
        self.register_buffer("key_positions", gathered[torch.argsort(gathered)], persistent=False)
        cos, sin = rope_tables(rope_pos, cfg.head_dim, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.linear_qkv(x)  # [s, b, groups_local * (q_per_group + 2) * d]
        s, b, _ = qkv.shape
        qkv = qkv.view(s, b, self.groups_local, self.q_per_group + 2, self.head_dim)
        q = qkv[:, :, :, : self.q_per_group].reshape(s, b, -1, self.head_dim)
        k = qkv[:, :, :, self.q_per_group]
        v = qkv[:, :, :, self.q_per_group + 1]
        q = apply_rope(q, self.cos, self.sin)
        k = apply_rope(k, self.cos, self.sin)
        if self.ctx.cp_size > 1:
            # All-gather K/V over cp (backward reduce-scatters their gradients) and restore
            # sequence order so that softmax sums run in the reference's order.
            # Bug zoo (cp-attn-backward): a backward that keeps only the local dK/dV instead
            # of reduce-scattering every rank's contribution to them.
            gather = (
                comm.gather_along_split_grad
                if self.ctx.has_bug("cp-attn-backward")
                else comm.gather_along
            )
            k = gather(k, 0, self.ctx.cp_group).index_select(0, self.key_order)
            v = gather(v, 0, self.ctx.cp_group).index_select(0, self.key_order)
        k = k.repeat_interleave(self.q_per_group, dim=2)
        v = v.repeat_interleave(self.q_per_group, dim=2)
        mask = self.positions[:, None] >= self.key_positions[None, :]
        if self.kernel == "tf32":
            q, k, v = _tf32(q), _tf32(k), _tf32(v)
        if self.kernel == "sdpa":
            out = self._sdpa(q, k, v, mask)
        else:
            scores = self._product("sbhd,tbhd->bhst", q, k) / math.sqrt(self.head_dim)
            if self.kernel == "einsum":
                scores = scores.float()
            scores = scores.masked_fill(~mask, float("-inf"))
            probs = torch.softmax(scores, dim=-1).to(v.dtype)
            if self.kernel == "tf32":
                probs = _tf32(probs)
            out = (
                self._accumulate(probs, v)
                if self.kernel == "lowp-accumulate"
                else self._product("bhst,tbhd->sbhd", probs, v)
            )
        return self.linear_proj(out.reshape(s, b, -1))

    def _product(self, equation: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        exact = torch.einsum(equation, a, b)
        if self.kernel != "bf16x3" or exact.dtype != torch.float32:
            return exact
        with torch.no_grad():
            a_hi, b_hi = _bf16_part(a), _bf16_part(b)
            a_lo, b_lo = _bf16_part(a - a_hi), _bf16_part(b - b_hi)
            split = (
                torch.einsum(equation, a_hi, b_hi)
                + torch.einsum(equation, a_hi, b_lo)
                + torch.einsum(equation, a_lo, b_hi)
            )
        # The backward's products stay fp32: only the forward's rounding is the kernel's.
        return exact + (split - exact).detach()

    @staticmethod
    def _accumulate(probs: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """probs @ v with a running sum rounded to v's dtype after every key."""
        acc = torch.zeros_like(v[0]).unsqueeze(0).expand(probs.shape[2], *v.shape[1:]).clone()
        for t in range(v.shape[0]):
            acc = acc + probs[:, :, :, t].permute(2, 0, 1).unsqueeze(-1) * v[t].unsqueeze(0)
        return acc

    @staticmethod
    def _sdpa(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        """The same attention through torch's fused kernel ([b, h, s, d] in, [s, b, h, d] out)."""
        out = torch.nn.functional.scaled_dot_product_attention(
            q.permute(1, 2, 0, 3), k.permute(1, 2, 0, 3), v.permute(1, 2, 0, 3), attn_mask=mask
        )
        return out.permute(2, 0, 1, 3)
