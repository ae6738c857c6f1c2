"""A tiny Megatron-core GPT trained the way Megatron-core's own examples do it: local layer
spec, `parallel_state`, Megatron's `DistributedDataParallel`, `get_megatron_optimizer`, the
no-pipelining schedule with `finalize_model_grads`. One process is the reference; under
torchrun with `--tp` (data parallelism over the remaining ranks), the candidate. The ttrace
lines end in `# ttrace`.

`--bug NAME` (candidates only) monkeypatches a Megatron-core reduction inside one module (see
`bugs.py`).

Model options for the newer releases (`model_options.py`):
`--softmax learnable` gives every attention a learnable per-head softmax offset (an attention
sink), `--mark-softmax-offset` marks it tensor-parallel as its heads are (the upstream fix;
without it, the release as shipped); `--mtp N` adds N multi-token-prediction layers;
`--per-token-loss` normalizes the loss by the global token count (Megatron's
`calculate_per_token_loss`); `--padding` masks a different number of trailing tokens of every
row, so that data-parallel ranks hold different token counts.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist

from . import cpu_stubs, model_options

cpu_stubs.install()

import ttrace.capture as ttc  # noqa: E402  # ttrace
from megatron.core import parallel_state  # noqa: E402
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

from .bugs import inject  # noqa: E402

VOCAB, HIDDEN, HEADS, LAYERS, SEQ, BATCH, MICRO_BATCHES, STEPS = 128, 32, 4, 2, 16, 4, 2, 2


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--sp", action="store_true", help="sequence parallelism")
    parser.add_argument("--dist-optimizer", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--bug", default="none")
    parser.add_argument("--softmax", default="vanilla", choices=("vanilla", "learnable"))
    parser.add_argument("--mark-softmax-offset", action="store_true")
    parser.add_argument("--mtp", type=int, default=0)
    parser.add_argument("--per-token-loss", action="store_true")
    parser.add_argument("--padding", action="store_true")
    return parser.parse_args()


def init(tp: int) -> int:
    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        # The reference: a one-rank group in memory (no port to collide with other jobs).
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    else:
        dist.init_process_group("gloo")
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp)
    return world


def micro_batch(step: int, mb: int, padding: bool) -> dict[str, torch.Tensor]:
    """This data-parallel rank's rows of global micro-batch `mb` of `step`; with `padding`,
    row r keeps its first SEQ - 3 r tokens in the loss."""
    g = torch.Generator().manual_seed(1000 * step + mb)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g)
    dp, rank = (
        parallel_state.get_data_parallel_world_size(),
        parallel_state.get_data_parallel_rank(),
    )
    rows = ids[rank * BATCH // dp : (rank + 1) * BATCH // dp]
    mask = torch.triu(torch.ones(SEQ, SEQ, dtype=torch.bool), diagonal=1)[None, None]
    positions = torch.arange(SEQ).expand(rows.shape[0], SEQ)
    valid = SEQ - 3 * torch.arange(BATCH)[rank * BATCH // dp : (rank + 1) * BATCH // dp] * padding
    loss_mask = (torch.arange(SEQ)[None, :] < valid[:, None]).float()
    return {
        "ids": rows[:, :-1],
        "labels": rows[:, 1:],
        "mask": mask,
        "positions": positions,
        "loss_mask": loss_mask,
    }


def build(args: argparse.Namespace) -> tuple[TransformerConfig, GPTModel]:
    dtype = torch.bfloat16 if args.bf16 else torch.float32
    config = TransformerConfig(
        num_layers=LAYERS,
        hidden_size=HIDDEN,
        num_attention_heads=HEADS,
        tensor_model_parallel_size=args.tp,
        sequence_parallel=args.sp,
        use_cpu_initialization=True,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        bf16=args.bf16,
        params_dtype=dtype,
        pipeline_dtype=dtype,
        finalize_model_grads_func=finalize_model_grads,
        calculate_per_token_loss=args.per_token_loss,
        **model_options.config_fields(args.softmax, args.mtp),
    )
    layer_spec = get_gpt_layer_local_spec()
    model = GPTModel(
        config,
        layer_spec,
        vocab_size=VOCAB,
        max_sequence_length=SEQ,
        position_embedding_type="learned_absolute",
        **model_options.mtp_spec(config, layer_spec),
    )
    if args.mark_softmax_offset:
        model_options.mark_softmax_offset_tensor_parallel(model)
    return config, model.to(dtype)


def forward_step_func(per_token_loss: bool):
    """Megatron's `forward_step_func` convention; the loss is the masked mean over the rank's
    tokens, or (per-token loss) the masked sum and its token count."""

    def forward_step(data_iterator, model):
        batch = next(data_iterator)
        losses = model(
            batch["ids"],
            batch["positions"],
            batch["mask"],
            labels=batch["labels"],
            loss_mask=batch["loss_mask"],
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
    world = init(args.tp)
    config, model = build(args)
    if world > 1:
        inject(args.bug, model)
    ttc.seeded_init(model, seed=0)  # ttrace
    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True, use_distributed_optimizer=args.dist_optimizer
    )
    ddp = DistributedDataParallel(config, ddp_config, model)
    optimizer = get_megatron_optimizer(
        OptimizerConfig(
            optimizer="adam",
            lr=1e-3,
            bf16=args.bf16,
            params_dtype=config.params_dtype,
            use_distributed_optimizer=args.dist_optimizer,
            clip_grad=1.0,
        ),
        [ddp],
    )
    role = "reference" if world == 1 else "candidate"  # ttrace
    variants = 2 * (world == 1)  # ttrace
    tracer = ttc.Tracer(ddp, optimizer, args.out, role=role, perturbations=variants)  # ttrace
    forward_backward = get_forward_backward_func()
    forward_step = forward_step_func(args.per_token_loss)

    def train_step(step: int) -> None:
        ddp.zero_grad_buffer()
        optimizer.zero_grad()
        forward_backward(
            forward_step_func=forward_step,
            data_iterator=iter([micro_batch(step, m, args.padding) for m in range(MICRO_BATCHES)]),
            model=[ddp],
            num_microbatches=MICRO_BATCHES,
            seq_length=SEQ,
            micro_batch_size=BATCH // parallel_state.get_data_parallel_world_size(),
            forward_only=False,
        )
        optimizer.step()

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                train_step(step)  # ttrace
    tracer.close()  # ttrace
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
