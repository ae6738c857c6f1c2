"""A tiny Megatron-core GPT trained the way Megatron-core's own examples do it: local layer
spec, `parallel_state`, Megatron's `DistributedDataParallel`, `get_megatron_optimizer`, the
no-pipelining schedule with `finalize_model_grads`. One process is the reference; under
torchrun with `--tp` (data parallelism over the remaining ranks), the candidate. The ttrace
lines end in `# ttrace`.

`--pp N` pipelines the layers over N stages with Megatron's 1F1B schedule (`--vpp V`: V
interleaved model chunks per stage; `--no-batch-p2p`: separate sends and receives instead of
one batched exchange); `--layers` sets the depth (the reference must use the same).

`--bug NAME` (candidates only) injects a bug into Megatron-core's code path (see `bugs.py`).

Model options for the newer releases (`model_options.py`):
`--softmax learnable` gives every attention a learnable per-head softmax offset (an attention
sink), `--mark-softmax-offset` marks it tensor-parallel as its heads are (the upstream fix;
without it, the release as shipped); `--mtp N` adds N multi-token-prediction layers;
`--per-token-loss` normalizes the loss by the global token count (Megatron's
`calculate_per_token_loss`); `--padding` masks a different number of trailing tokens of every
row, so that data-parallel ranks hold different token counts.

MoE options: `--aux-loss C` sets the load-balancing loss coefficient (default 0: none);
`--balanced-padding` pads the same number of tokens at the end of each half of every row, so
that both sequence-parallel halves hold as many routed tokens (the release's per-token
scaling of the load-balancing loss assumes it); `--fix-router-count` applies the upstream fix
of the router's per-expert token count (without it, the release as shipped);
`--fix-expert-grad-groups` applies the upstream fix that reduces expert gradients over expert
data parallelism when expert TP differs from TP at EP 1 (a no-op on releases that have it).

`--recompute full` recomputes every layer in backward (Megatron's full recompute, uniform
method, one layer per checkpoint); `--recompute block` recomputes the first layer of each
stage only (block method, `recompute_num_layers=1`); `--recompute selective` recomputes each
core attention. `--dropout P` sets Megatron's hidden dropout (embedding and both
bias-dropout-adds of every layer; default 0), `--attention-dropout P` its attention dropout
(default 0: Megatron draws it from each tensor-parallel rank's own stream, the model-parallel
RNG tracker's, so a TP candidate's attention masks are not a single-process reference's). The
generators are seeded as Megatron-LM seeds them (`model_parallel_cuda_manual_seed`) before
the model is built, and again before training: what building draws depends on the layout (a
pipeline stage builds only its layers), and dropout must draw the reference's masks.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist

from . import cpu_stubs, model_options

cpu_stubs.install()

import ttrace.capture as ttc  # noqa: E402  # ttrace
from megatron.core import parallel_state, tensor_parallel  # noqa: E402
from megatron.core.distributed import (  # noqa: E402
    DistributedDataParallel,
    DistributedDataParallelConfig,
    finalize_model_grads,
)
from megatron.core.models.gpt import GPTModel  # noqa: E402
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec  # noqa: E402
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer  # noqa: E402
from megatron.core.pipeline_parallel import get_forward_backward_func  # noqa: E402
from megatron.core.transformer import TransformerConfig  # noqa: E402

from .bugs import inject, inject_ddp  # noqa: E402

VOCAB, HIDDEN, HEADS, SEQ, BATCH, MICRO_BATCHES, STEPS = 128, 32, 4, 16, 4, 2, 2
SEED = 0
EXPERTS, TOPK = 4, 2


def set_batch(moe: bool) -> None:
    """MoE runs use a batch of 8: 4 data-parallel ranks then hold 2 rows each, so no local
    batch of 1 looks like a broadcast mask's batch dimension."""
    global BATCH
    BATCH = 8 if moe else BATCH


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--pp", type=int, default=1)
    parser.add_argument("--vpp", type=int, default=None, help="model chunks per stage")
    parser.add_argument("--no-batch-p2p", action="store_true")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--micro-batches", type=int, default=MICRO_BATCHES)
    parser.add_argument("--sp", action="store_true", help="sequence parallelism")
    parser.add_argument("--dist-optimizer", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--bug", default="none")
    parser.add_argument("--moe", action="store_true", help=f"{EXPERTS} experts, top-{TOPK}")
    parser.add_argument("--ep", type=int, default=1, help="expert parallel size")
    parser.add_argument("--etp", type=int, default=None, help="expert tensor parallel size")
    parser.add_argument("--dispatcher", default="alltoall", help="MoE token dispatcher")
    parser.add_argument("--softmax", default="vanilla", choices=("vanilla", "learnable"))
    parser.add_argument("--mark-softmax-offset", action="store_true")
    parser.add_argument("--mtp", type=int, default=0)
    parser.add_argument("--per-token-loss", action="store_true")
    parser.add_argument("--padding", action="store_true")
    parser.add_argument("--aux-loss", type=float, default=0.0, help="MoE load-balancing coeff")
    parser.add_argument("--balanced-padding", action="store_true")
    parser.add_argument("--fix-router-count", action="store_true")
    parser.add_argument("--fix-expert-grad-groups", action="store_true")
    parser.add_argument("--recompute", default=None, choices=("full", "block", "selective"))
    parser.add_argument("--dropout", type=float, default=0.0, help="hidden dropout")
    parser.add_argument("--attention-dropout", type=float, default=0.0)
    parser.add_argument(
        "--reference", default=None, help="reference bundle: its shapes lay out undeclared params"
    )
    return parser.parse_args()


def init(args: argparse.Namespace) -> int:
    torch.manual_seed(SEED)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        # The reference: a one-rank group in memory (no port to collide with other jobs).
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    else:
        dist.init_process_group("gloo")
    parallel_state.initialize_model_parallel(
        tensor_model_parallel_size=args.tp,
        expert_model_parallel_size=args.ep,
        expert_tensor_parallel_size=args.etp,
        pipeline_model_parallel_size=args.pp,
        virtual_pipeline_model_parallel_size=args.vpp,
    )
    tensor_parallel.model_parallel_cuda_manual_seed(SEED)  # as Megatron-LM seeds
    return world


def micro_batch(
    step: int, mb: int, loss_padding: bool = False, balanced: bool = False
) -> dict[str, torch.Tensor]:
    """This data-parallel rank's rows of global micro-batch `mb` of `step`; with
    `loss_padding`, row r keeps its first SEQ - 3 r tokens in the loss; with `balanced`, the
    MoE padding of a row is split evenly over the ends of its two halves."""
    g = torch.Generator().manual_seed(1000 * step + mb)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)
    dp, rank = (
        parallel_state.get_data_parallel_world_size(),
        parallel_state.get_data_parallel_rank(),
    )
    rows = ids[rank * BATCH // dp : (rank + 1) * BATCH // dp]
    mask = torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), diagonal=1)[None, None]
    positions = torch.arange(SEQ).expand(rows.shape[0], SEQ)
    # MoE routing leaves padding out: the last tokens of each row (True = padding).
    lengths = torch.randint(SEQ // 2, SEQ + 1, (BATCH,), generator=g)
    padding = torch.arange(SEQ)[None, :] >= lengths[:, None]
    if balanced:
        padding = torch.arange(SEQ)[None, :] % (SEQ // 2) >= (lengths // 2)[:, None]
    mine = slice(rank * BATCH // dp, (rank + 1) * BATCH // dp)
    valid = SEQ - 3 * torch.arange(BATCH)[mine] * loss_padding
    loss_mask = (torch.arange(SEQ)[None, :] < valid[:, None]).float()
    return {
        "ids": rows[:, :-1],
        "labels": rows[:, 1:],
        "mask": mask,
        "positions": positions,
        "padding": padding[mine],
        "loss_mask": loss_mask,
    }


def moe_options(args: argparse.Namespace) -> dict:
    if not args.moe:
        return {}
    return {
        "num_moe_experts": EXPERTS,
        "moe_router_topk": TOPK,
        "moe_token_dispatcher_type": args.dispatcher,
        "expert_model_parallel_size": args.ep,
        "expert_tensor_parallel_size": args.etp,
        "moe_aux_loss_coeff": args.aux_loss,
        "moe_ffn_hidden_size": 2 * HIDDEN,
        # As in Mixtral: no linear biases (an expert's bias is added in place to the output
        # of its reduction, which autograd refuses at tp 1).
        "add_bias_linear": False,
    }


def build(args: argparse.Namespace) -> tuple[TransformerConfig, list[GPTModel]]:
    """This rank's model chunks (one without interleaving), each knowing whether it holds
    the embedding (`pre_process`) and the head (`post_process`)."""
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    config = TransformerConfig(
        num_layers=args.layers,
        pipeline_model_parallel_size=args.pp,
        virtual_pipeline_model_parallel_size=args.vpp,
        batch_p2p_comm=not args.no_batch_p2p,
        batch_p2p_sync=False,  # a CUDA synchronize; gloo on CPU needs none
        hidden_size=HIDDEN,
        num_attention_heads=HEADS,
        tensor_model_parallel_size=args.tp,
        sequence_parallel=args.sp,
        use_cpu_initialization=True,
        hidden_dropout=args.dropout,
        attention_dropout=args.attention_dropout,
        bf16=args.bf16,
        params_dtype=dtype,
        pipeline_dtype=dtype,
        finalize_model_grads_func=finalize_model_grads,
        **moe_options(args),
        calculate_per_token_loss=args.per_token_loss,
        **model_options.config_fields(args.softmax, args.mtp),
        **model_options.recompute_fields(args.recompute),
    )
    layer_spec = get_gpt_layer_local_spec(num_experts=EXPERTS if args.moe else None)
    chunks = []
    for vp in range(args.vpp or 1):
        stage = vp if args.vpp else None
        chunk = GPTModel(
            config,
            layer_spec,
            vocab_size=VOCAB,
            max_sequence_length=SEQ,
            position_embedding_type="learned_absolute",
            pre_process=parallel_state.is_pipeline_first_stage(False, stage),
            post_process=parallel_state.is_pipeline_last_stage(False, stage),
            vp_stage=stage,
            **model_options.mtp_spec(config, layer_spec),
        )
        if args.mark_softmax_offset:
            model_options.mark_softmax_offset_tensor_parallel(chunk)
        if args.fix_expert_grad_groups:
            fixed = model_options.mark_expert_grads_expert_parallel(chunk, config)
            print(f"expert parameters marked expert-parallel: {fixed}", flush=True)
        chunks.append(chunk.to(dtype))
    return config, chunks


def print_loss(step: int, stats: list[dict]) -> None:
    """The global batch's mean loss (each data-parallel rank's mean, averaged), on rank 0.
    Only the last pipeline stage computes losses; the others have no statistics."""
    if not stats:
        return
    loss = torch.stack([s["lm loss"] for s in stats]).mean()
    group = parallel_state.get_data_parallel_group()
    dist.all_reduce(loss, group=group)
    loss /= dist.get_world_size(group)
    if dist.get_rank() == 0:
        print(f"step {step} loss {loss.item():.6f}", flush=True)


def forward_step_func(per_token_loss: bool, moe: bool):
    """Megatron's `forward_step_func` convention; the loss is the masked mean over the rank's
    tokens, or (per-token loss) the masked sum and its token count. Stages after the first
    take their input from the previous stage (the schedule sets it); the token ids are then
    unused."""

    def forward_step(data_iterator, model):
        batch = next(data_iterator)
        losses = model(
            batch["ids"],
            batch["positions"],
            batch["mask"],
            labels=batch["labels"],
            loss_mask=batch["loss_mask"],
            padding_mask=batch["padding"] if moe else None,
        )
        mask = batch["loss_mask"]

        def loss_func(output: torch.Tensor) -> tuple:
            total = (output.float() * mask).sum()
            tokens = mask.sum().to(torch.int)
            if per_token_loss:
                return total, tokens, {"lm loss": total.detach()}
            loss = total / mask.sum()
            return loss, {"lm loss": loss.detach()}

        return losses, loss_func

    return forward_step


def main() -> None:
    args = parse_args()
    set_batch(args.moe)
    if args.fix_router_count:
        model_options.fix_router_token_count()
    world = init(args)
    config, chunks = build(args)
    if world > 1:
        inject(args.bug, chunks)
    ttc.seeded_init(chunks, seed=0, reference=args.reference)  # ttrace
    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True, use_distributed_optimizer=args.dist_optimizer
    )
    ddp = [
        DistributedDataParallel(config, ddp_config, chunk, disable_bucketing=vp > 0)
        for vp, chunk in enumerate(chunks)
    ]
    if world > 1:
        for chunk in ddp:
            inject_ddp(args.bug, chunk)
    optimizer = get_megatron_optimizer(
        OptimizerConfig(
            optimizer="adam",
            lr=1e-3,
            bf16=args.bf16,
            params_dtype=config.params_dtype,
            use_distributed_optimizer=args.dist_optimizer,
            clip_grad=1.0,
        ),
        ddp,
    )
    # Every rank and the reference start training from the same generator states.
    tensor_parallel.model_parallel_cuda_manual_seed(SEED)
    role = "reference" if world == 1 else "candidate"  # ttrace
    variants = 2 * (world == 1)  # ttrace
    tracer = ttc.Tracer(ddp, optimizer, args.out, role=role, perturbations=variants)  # ttrace
    forward_backward = get_forward_backward_func()
    forward_step = forward_step_func(args.per_token_loss, args.moe)

    def train_step(step: int) -> None:
        for chunk in ddp:
            chunk.zero_grad_buffer()
        optimizer.zero_grad()
        batches = [
            micro_batch(step, m, args.padding, args.balanced_padding)
            for m in range(args.micro_batches)
        ]
        stats = forward_backward(
            forward_step_func=forward_step,
            # Every chunk reads the same micro-batches (the schedule calls each chunk once
            # per micro-batch).
            data_iterator=[iter(batches) for _ in ddp] if len(ddp) > 1 else iter(batches),
            model=ddp,
            num_microbatches=args.micro_batches,
            seq_length=SEQ,
            micro_batch_size=BATCH // parallel_state.get_data_parallel_world_size(),
            forward_only=False,
        )
        optimizer.step()
        print_loss(step, stats)

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                train_step(step)  # ttrace
    tracer.close()  # ttrace
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
