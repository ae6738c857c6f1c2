"""A Megatron-core GPT trained by a loop shaped like Megatron-LM's `pretrain()`: a
`model_provider`, a `train()` that calls the module-level `train_step(forward_step_func,
data_iterator, model, optimizer, opt_param_scheduler, config, forward_backward_func)` once
per optimizer step, and a `train_step` that does what Megatron-LM's does (zero the grad
buffers, Megatron-core's `forward_backward_func` over the micro-batches, `optimizer.step()`).
Megatron-LM's own `megatron.training` is not installed here (the megatron-core wheel holds
`megatron/core` only), so this is its shape on Megatron-core's own objects and schedule, not
Megatron-LM itself. The ttrace lines end in `# ttrace`: `train_step` wrapped as
docs/integrations.md shows for `pretrain()`, and the weights seeded in the model provider.

One process is the reference (`ttrace capture --reference` relaunches it per variant);
torchrun with `--tp 2` the candidate. `--bug NAME` injects a Megatron-core bug (`bugs.py`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import torch
import torch.distributed as dist

from . import cpu_stubs

cpu_stubs.install()

import ttrace.capture as ttc  # noqa: E402  # ttrace
from megatron.core import parallel_state  # noqa: E402
from megatron.core.distributed import (  # noqa: E402
    DistributedDataParallel,
    DistributedDataParallelConfig,
)
from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer  # noqa: E402
from megatron.core.pipeline_parallel import get_forward_backward_func  # noqa: E402
from ttrace.integrations.megatron import traced_train_step  # noqa: E402  # ttrace

from .bugs import inject  # noqa: E402
from .gpt_train import (  # noqa: E402
    BATCH,
    SEQ,
    STEPS,
    build,
    forward_step_func,
    init,
    micro_batch,
    parse_args,
)


def model_provider(args: Any) -> list[torch.nn.Module]:
    """What a `model_provider` hands `pretrain()`: this rank's model."""
    _, chunks = build(args)
    if dist.get_world_size() > 1:
        inject(args.bug, chunks)
    ttc.seeded_init(chunks, seed=0)  # ttrace
    return chunks


def train_step(
    forward_step_func: Any,
    data_iterator: Iterator[dict[str, torch.Tensor]],
    model: list[DistributedDataParallel],
    optimizer: Any,
    opt_param_scheduler: Any,
    config: Any,
    forward_backward_func: Any,
) -> dict[str, float]:
    """Megatron-LM's `train_step`, its distributed parts as they are there."""
    for chunk in model:
        chunk.zero_grad_buffer()
    optimizer.zero_grad()
    losses = forward_backward_func(
        forward_step_func=forward_step_func,
        data_iterator=data_iterator,
        model=model,
        num_microbatches=config.micro_batches,  # Megatron-LM: get_num_microbatches()
        seq_length=SEQ,
        micro_batch_size=BATCH // parallel_state.get_data_parallel_world_size(),
        forward_only=False,
    )
    update_successful, grad_norm, _ = optimizer.step()
    assert update_successful
    if opt_param_scheduler is not None:
        opt_param_scheduler.step(increment=1)
    return {"lm loss": float(torch.stack([x["lm loss"] for x in losses]).mean()), "norm": grad_norm}


def train(model: list[DistributedDataParallel], optimizer: Any, args: Any) -> None:
    """Megatron-LM's `train()` loop (`args` stands for its global arguments)."""
    batches = (micro_batch(s, m) for s in range(STEPS) for m in range(args.micro_batches))
    forward_step = forward_step_func(per_token_loss=False, moe=False)
    iteration = 0
    while iteration < STEPS:
        # Looked up in the module at each call, as Megatron-LM's `train()` does: the
        # wrapped `train_step` is the one that runs.
        stats = train_step(
            forward_step, batches, model, optimizer, None, args, get_forward_backward_func()
        )
        if dist.get_rank() == 0:
            print(f"iteration {iteration} lm loss {stats['lm loss']:.6f}", flush=True)
        iteration += 1


def pretrain(args: Any) -> None:
    """`pretrain()`'s setup: the model in Megatron-core's DDP, its optimizer, then `train`."""
    chunks = model_provider(args)
    ddp_config = DistributedDataParallelConfig(grad_reduce_in_fp32=True)
    model = [DistributedDataParallel(c.config, ddp_config, c) for c in chunks]
    optimizer = get_megatron_optimizer(
        OptimizerConfig(optimizer="adam", lr=1e-3, params_dtype=torch.float32, clip_grad=1.0),
        model,
    )
    train(model, optimizer, args)


def main() -> None:
    args = parse_args()
    init(args)
    this = sys.modules[__name__]
    this.train_step = traced_train_step(this.train_step, args.out)  # type: ignore[attr-defined]  # ttrace
    pretrain(args)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
