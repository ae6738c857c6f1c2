"""torchtitan 0.3.0's Llama 3 debug model trained as torchtitan's trainer trains it, from the
package's own code: the `debugmodel` config (2 of its 6 layers), `parallelize_llama`
(its tensor + sequence parallel sharding config, its `apply_fsdp_to_decoder` with FSDP's
gradient division off), its cross-entropy loss summed and divided by the global token count
(`dist_sum_tensor` over the batch mesh), its `clip_grad_norm_`, and its optimizer container
(AdamW). One process is the reference (not parallelized); under torchrun, `--tp` ranks of
tensor parallelism and the rest FSDP2 (`dp_shard`), on the `partial_dtensor` backend.
`--bug` injects one of `bugs.py`'s bugs. CPU shims: `cpu_shims.py`."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from typing import Any

import torch
import torch.distributed as dist

import ttrace.capture as ttc  # ttrace

from . import bugs, cpu_shims

LAYERS, BATCH, SEQ, STEPS, MAX_NORM = 2, 4, 16, 2, 1.0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--bug", choices=["none", "tp", "fsdp"], default="none")
    return parser.parse_args()


def model_config() -> Any:
    from torchtitan.models.llama3 import llama3_configs
    from torchtitan.models.llama3.sharding import set_llama3_sharding_config

    config = llama3_configs["debugmodel"](attn_backend="flex")
    config.layers = config.layers[:LAYERS]
    cpu_shims.causal_sdpa_attention(config)
    for layer in config.layers:  # what update_from_config does for training.seq_len
        layer.attention.rope = dataclasses.replace(layer.attention.rope, max_seq_len=SEQ)
    set_llama3_sharding_config(config, enable_sp=True)
    return config


def parallelize(model: torch.nn.Module, tp: int, world: int) -> Any:
    from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig
    from torchtitan.distributed import ParallelDims
    from torchtitan.distributed import utils as dist_utils
    from torchtitan.models.llama3 import parallelize_llama

    dist_utils.set_spmd_backend("partial_dtensor")  # what the trainer does first
    parallelism = ParallelismConfig(tensor_parallel_degree=tp, spmd_backend="partial_dtensor")
    dims = ParallelDims.from_config(parallelism, world)
    dims.build_mesh()
    parallelize_llama(
        model,
        parallel_dims=dims,
        training=TrainingConfig(mixed_precision_param="float32"),
        parallelism=parallelism,
        compile_config=CompileConfig(),
        ac_config=None,
        dump_folder=tempfile.gettempdir(),
    )
    return dims


def token_batch(step: int) -> torch.Tensor:
    """Token ids [BATCH, SEQ + 1], the same on every rank and in the reference."""
    g = torch.Generator().manual_seed(1000 + step)
    return torch.randint(0, 2048, (BATCH, SEQ + 1), generator=g)


def main() -> None:
    from torchtitan.components.loss import CrossEntropyLoss
    from torchtitan.components.optimizer import OptimizersContainer
    from torchtitan.components.optimizer.optimizer import ParamGroupConfig
    from torchtitan.distributed import utils as dist_utils

    args = parse_args()
    cpu_shims.use_cpu_device()
    torch.manual_seed(0)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    model = model_config().build()
    dims, dp, dp_rank = None, 1, 0
    if world > 1:
        dist.init_process_group("gloo")
        if args.bug == "tp":
            bugs.break_row_parallel_reduction(model.layers["0"].feed_forward.w2)
        if args.bug == "fsdp":
            bugs.average_block_zero_gradients()
        dims = parallelize(model, args.tp, world)
        cpu_shims.gloo_sum_reduction(model)
        dp, dp_rank = world // args.tp, dist.get_rank() // args.tp
    ttc.seeded_init(model, seed=0)  # ttrace
    adamw = {"lr": 8e-4, "betas": (0.9, 0.95), "eps": 1e-8, "weight_decay": 0.1}
    optimizers = OptimizersContainer.Config(
        param_groups=[
            ParamGroupConfig(pattern=".*", optimizer_name="AdamW", optimizer_kwargs=adamw)
        ],
        implementation="foreach",
    ).build(model_parts=[model])
    loss_fn = CrossEntropyLoss.Config().build()
    opt = optimizers.optimizers[0]  # the AdamW the container steps
    role = "reference" if world == 1 else "candidate"  # ttrace
    perturbations = 2 * (world == 1)  # ttrace
    tracer = ttc.Tracer(model, opt, args.out, role=role, perturbations=perturbations)  # ttrace

    def train_step(step: int) -> None:
        tokens = token_batch(step)
        rows = BATCH // dp
        tokens = tokens[dp_rank * rows : (dp_rank + 1) * rows]
        inputs, labels = tokens[:, :-1], tokens[:, 1:]
        local_tokens = torch.tensor(labels.numel(), dtype=torch.int64)
        if dims is not None and dims.dp_enabled:
            global_tokens = dist_utils.dist_sum_tensor(local_tokens, dims.get_mesh("batch"))
        else:
            global_tokens = local_tokens
        loss, _ = loss_fn(model(inputs), labels, global_tokens)
        loss.backward()
        dist_utils.clip_grad_norm_(list(model.parameters()), MAX_NORM, foreach=True)
        optimizers.step()
        optimizers.zero_grad()

    for _ in tracer.run_variants():  # ttrace
        for step in range(STEPS):  # ttrace
            with tracer.step(step):  # ttrace
                train_step(step)  # ttrace
    tracer.close()  # ttrace


if __name__ == "__main__":
    main()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
