"""Model options of the tiny Megatron-core GPT beyond the plain decoder: an attention sink (a
learnable per-head softmax offset) and multi-token prediction, both built by Megatron-core's
own config fields and layer specs (present in 0.16.1 and in the newest release)."""

from __future__ import annotations

from typing import Any

import torch

from megatron.core.models.gpt.gpt_layer_specs import get_gpt_mtp_block_spec
from megatron.core.tensor_parallel.layers import set_tensor_model_parallel_attributes
from megatron.core.transformer import TransformerConfig


def config_fields(softmax: str, mtp_layers: int) -> dict[str, Any]:
    """TransformerConfig fields; none for the plain model, so its config stays the default."""
    fields: dict[str, Any] = {}
    if softmax != "vanilla":
        fields["softmax_type"] = softmax
    if mtp_layers:
        fields["mtp_num_layers"] = mtp_layers
    return fields


def recompute_fields(granularity: str | None) -> dict[str, Any]:
    """Megatron's activation recompute: "full" checkpoints every layer (uniform method, one
    layer per checkpoint), "block" the first layer of each stage only (block method, one
    layer: the others run without recompute), "selective" each layer's core attention
    (Megatron's default `recompute_modules`). None: no recompute, the config stays the
    default."""
    if granularity is None:
        return {}
    if granularity in ("full", "block"):
        return {
            "recompute_granularity": "full",
            "recompute_method": "uniform" if granularity == "full" else "block",
            "recompute_num_layers": 1,
        }
    return {"recompute_granularity": "selective"}


def mtp_spec(config: TransformerConfig, layer_spec: Any) -> dict[str, Any]:
    """GPTModel's `mtp_block_spec` argument built from the decoder's own (local) layer spec."""
    if not config.mtp_num_layers:
        return {}
    return {
        "mtp_block_spec": get_gpt_mtp_block_spec(config, layer_spec, use_transformer_engine=False)
    }


def mark_softmax_offset_tensor_parallel(model: torch.nn.Module) -> int:
    """The upstream fix of the attention sink: `DotProductAttention` allocates its learnable
    `softmax_offset` with one entry per local head (split by heads over tp) but does not mark
    it tensor-parallel, so gradient clipping counts only tp rank 0's part in the global norm.
    Marks it as Megatron marks every head-split weight; returns how many were marked."""
    marked = 0
    for module in model.modules():
        offset = getattr(module, "softmax_offset", None)
        if isinstance(offset, torch.nn.Parameter):
            set_tensor_model_parallel_attributes(offset, is_parallel=True, dim=0, stride=1)
            marked += 1
    if marked == 0:
        raise ValueError("--mark-softmax-offset: the model has no learnable softmax_offset")
    return marked


def fix_router_token_count() -> None:
    """The upstream fix of the MoE router's token count: the release's
    `get_tokens_per_expert_and_token_count` hands its local per-expert count to
    `reduce_from_tensor_model_parallel_region`, whose all-reduce over the tp group works in
    place, and then takes the local token count (the per-token scaling of the load-balancing
    loss) from the reduced tensor: the whole group's count. The fix reduces a copy. The router
    imports the function by name, so its module is patched."""
    from megatron.core.tensor_parallel import reduce_from_tensor_model_parallel_region
    from megatron.core.transformer.moe import router

    def counts(
        routing_map: torch.Tensor,
        reduce_group: torch.distributed.ProcessGroup,
        topk: int | None = None,
        with_padding_mask: bool = False,
    ) -> tuple[torch.Tensor, Any, Any]:
        local_tokens_per_expert = routing_map.sum(dim=0)
        global_tokens_per_expert = reduce_from_tensor_model_parallel_region(
            local_tokens_per_expert.clone(), reduce_group
        )
        if with_padding_mask:
            assert topk is not None
            local_num_tokens = local_tokens_per_expert.sum() / topk
            total_num_tokens = global_tokens_per_expert.sum() / topk
        else:
            local_num_tokens = routing_map.shape[0]
            total_num_tokens = local_num_tokens * reduce_group.size()
        return global_tokens_per_expert, local_num_tokens, total_num_tokens

    router.get_tokens_per_expert_and_token_count = counts


def mark_expert_grads_expert_parallel(model: torch.nn.Module, config: TransformerConfig) -> int:
    """The upstream fix of expert gradient reduction when expert tensor parallelism differs
    from tensor parallelism without expert parallelism (0.19's `use_expert_pgs`): 0.16's
    `ColumnParallelLinear` / `RowParallelLinear` mark an expert's weights `allreduce = False`
    (reduced over expert data parallelism by Megatron's DDP) only when
    `expert_model_parallel_size > 1`. At EP 1 with expert TP 1 under TP 2 the experts are whole
    on every TP rank, each rank's expert gradients are partial sums over its own tokens, and
    DDP reduces them over data parallelism only: the TP ranks' parts are never added. Marks
    every expert linear's parameters as the fixed release does; returns how many it changed
    (none on a release that has the fix)."""
    if config.expert_tensor_parallel_size == config.tensor_model_parallel_size:
        return 0
    changed = 0
    for module in model.modules():
        if not getattr(module, "is_expert", False):
            continue
        for param in module.parameters(recurse=False):
            if getattr(param, "allreduce", True):
                param.allreduce = False
                changed += 1
    return changed
