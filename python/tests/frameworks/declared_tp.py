"""Tensor + sequence parallelism with torch's own styles (`parallelize_module`) on models
whose shapes invite a wrong guess, on 2 gloo ranks; one process is the reference.

- `--model hf`: Hugging Face's `LlamaForCausalLM` (transformers) with torch's styles. Its
  rotary embedding's outputs `[1, s, head_dim]` are whole on every rank (computed from the
  replicated position ids), while head_dim x tp is a key/value projection's width.
- `--model sdpa`: a torchtitan-style Llama block whose attention kernel is a module around
  `scaled_dot_product_attention`: its inputs and output `[b, heads/tp, s, head_dim]` are
  split on the heads (dim 1), as the column-parallel q/k/v projections declare, while
  head_dim x tp is again a weight's width.
`--bug scale` scales rank 1's row-parallel partial of the first feed-forward down
projection before its reduction.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

import ttrace.capture as ttc  # ttrace

from .common import SEQ, STEPS, finish, global_batch, init
from .hf_model import break_row_parallel, tiny_llama
from .titan_model import ModelArgs, apply_rotary_emb, precompute_freqs_cis, repeat_kv


class ScaledDotProductAttention(nn.Module):
    """The attention kernel as its own module, as torchtitan wraps it."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Attention(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.n_rep = args.n_heads // args.n_kv_heads
        self.head_dim = args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        self.sdpa = ScaledDotProductAttention()

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        # -1 heads: a tensor-parallel rank holds its share of them
        q, k, v = (w(x).view(b, s, -1, self.head_dim) for w in (self.wq, self.wk, self.wv))
        q, k = apply_rotary_emb(q, k, freqs_cis)
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)
        out = self.sdpa(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        return self.wo(out.transpose(1, 2).reshape(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.w1 = nn.Linear(args.dim, args.ffn_hidden, bias=False)
        self.w2 = nn.Linear(args.ffn_hidden, args.dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)))


class Block(nn.Module):
    def __init__(self, args: ModelArgs) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(args.dim)
        self.attention = Attention(args)
        self.ffn_norm = nn.RMSNorm(args.dim)
        self.feed_forward = FeedForward(args)

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class SdpaModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        args = ModelArgs()
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList([Block(args) for _ in range(args.n_layers)])
        self.norm = nn.RMSNorm(args.dim)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        table = precompute_freqs_cis(args.dim // args.n_heads, args.max_seq_len, args.rope_theta)
        self.register_buffer("freqs_cis", table, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cis)
        return self.output(self.norm(h))


def block_plan(attention: str, names: tuple[str, str, str, str], mlp: str, ffn: tuple) -> dict:
    """torch's tensor + sequence parallel plan for one block: norms sequence-sharded, the
    attention and feed-forward inputs gathered, q/k/v and up projections column-parallel,
    output projections row-parallel back to sequence shards."""
    q, k, v, o = names
    kwarg = attention == "self_attn"  # Hugging Face passes hidden_states by keyword
    gather = (
        PrepareModuleInput(
            input_kwarg_layouts={"hidden_states": Shard(1)},
            desired_input_kwarg_layouts={"hidden_states": Replicate()},
        )
        if kwarg
        else PrepareModuleInput(
            input_layouts=(Shard(1), None), desired_input_layouts=(Replicate(), None)
        )
    )
    plan = {
        attention: gather,
        f"{attention}.{q}": ColwiseParallel(),
        f"{attention}.{k}": ColwiseParallel(),
        f"{attention}.{v}": ColwiseParallel(),
        f"{attention}.{o}": RowwiseParallel(output_layouts=Shard(1)),
        mlp: PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)),
    }
    *up, down = ffn
    plan.update({f"{mlp}.{name}": ColwiseParallel() for name in up})
    plan[f"{mlp}.{down}"] = RowwiseParallel(output_layouts=Shard(1))
    return plan


def parallelize_hf(model: nn.Module, world: int) -> None:
    mesh = init_device_mesh("cpu", (world,))
    inner = model.model
    top = {
        "embed_tokens": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(use_local_output=True),
    }
    parallelize_module(inner, mesh, top)
    head = ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate())
    parallelize_module(model, mesh, {"lm_head": head})
    names = ("q_proj", "k_proj", "v_proj", "o_proj")
    for layer in inner.layers:
        plan = block_plan("self_attn", names, "mlp", ("gate_proj", "up_proj", "down_proj"))
        plan["input_layernorm"] = SequenceParallel()
        plan["post_attention_layernorm"] = SequenceParallel()
        parallelize_module(layer, mesh, plan)


def parallelize_sdpa(model: SdpaModel, world: int) -> None:
    mesh = init_device_mesh("cpu", (world,))
    top = {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
        "norm": SequenceParallel(),
        "output": ColwiseParallel(input_layouts=Shard(1), output_layouts=Replicate()),
    }
    parallelize_module(model, mesh, top)
    for block in model.layers:
        plan = block_plan("attention", ("wq", "wk", "wv", "wo"), "feed_forward", ("w1", "w2"))
        plan["attention_norm"] = SequenceParallel()
        plan["ffn_norm"] = SequenceParallel()
        parallelize_module(block, mesh, plan)


def build(kind: str, world: int, bug: str) -> tuple[nn.Module, callable]:
    """The model (parallelized on more than one rank) and its logits function."""
    if kind == "hf":
        model = tiny_llama()
        down = model.model.layers[0].mlp.down_proj
        positions = torch.arange(SEQ).unsqueeze(0)

        def logits(ids: torch.Tensor) -> torch.Tensor:
            return model(input_ids=ids, position_ids=positions).logits
    else:
        torch.manual_seed(0)
        model = SdpaModel()
        down = model.layers[0].feed_forward.w2

        def logits(ids: torch.Tensor) -> torch.Tensor:
            return model(ids)

    if world > 1:
        if bug != "none":
            break_row_parallel(down, bug)
        (parallelize_hf if kind == "hf" else parallelize_sdpa)(model, world)
    return model, logits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--model", choices=["hf", "sdpa"], required=True)
    parser.add_argument("--bug", choices=["none", "scale"], default="none")
    args = parser.parse_args()
    _, world = init()
    model, logits = build(args.model, world, args.bug)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ttc.seeded_init(model, seed=0)  # ttrace
    role = "reference" if world == 1 else "candidate"  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=2 * (world == 1))  # ttrace

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                ids = global_batch(step)
                out = logits(ids)
                F.cross_entropy(out.flatten(0, 1), ids.roll(-1, dims=1).flatten()).backward()
                opt.step()
                opt.zero_grad()
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    finish()  # after main's models are freed: see common.finish
