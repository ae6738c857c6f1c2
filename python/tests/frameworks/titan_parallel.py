"""torchtitan-style parallelization of the tiny Llama 3 (`titan_model`): tensor + sequence
parallelism with `parallelize_module` plans, loss parallel on or off, FSDP2 `fully_shard`
per block and at the root, on a 1-d or a 2-d `(dp_shard, tp)` device mesh. Also the
injected bugs the tests must find."""

from __future__ import annotations

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    PrepareModuleInput,
    RowwiseParallel,
    SequenceParallel,
    parallelize_module,
)

from .common import BUG_SCALE
from .titan_model import Transformer


def build_mesh(dp: int, tp: int) -> DeviceMesh:
    """The job's mesh, named as torchtitan names it; 1-d when one degree is 1."""
    if dp > 1 and tp > 1:
        return init_device_mesh("cpu", (dp, tp), mesh_dim_names=("dp_shard", "tp"))
    if tp > 1:
        return init_device_mesh("cpu", (tp,), mesh_dim_names=("tp",))
    return init_device_mesh("cpu", (dp,), mesh_dim_names=("dp_shard",))


def apply_tp(model: Transformer, tp_mesh: DeviceMesh, loss_parallel: bool) -> None:
    """Embedding output and norms sequence-sharded, attention and feed-forward
    column/row-parallel; with loss parallel the logits stay a vocabulary-sharded DTensor."""
    parallelize_module(
        model,
        tp_mesh,
        {
            "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1)),
            "norm": SequenceParallel(),
            "output": ColwiseParallel(
                input_layouts=Shard(1),
                output_layouts=Shard(-1) if loss_parallel else Replicate(),
                use_local_output=not loss_parallel,
            ),
        },
    )
    for block in model.layers.values():
        plan = {
            "attention_norm": SequenceParallel(),
            # freqs_cis stays a plain tensor: None leaves it alone.
            "attention": PrepareModuleInput(
                input_layouts=(Shard(1), None), desired_input_layouts=(Replicate(), None)
            ),
            "attention.wq": ColwiseParallel(),
            "attention.wk": ColwiseParallel(),
            "attention.wv": ColwiseParallel(),
            "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
            "ffn_norm": SequenceParallel(),
            "feed_forward": PrepareModuleInput(
                input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)
            ),
            "feed_forward.w1": ColwiseParallel(),
            "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
            "feed_forward.w3": ColwiseParallel(),
        }
        parallelize_module(block, tp_mesh, plan)


def apply_fsdp(model: Transformer, dp_mesh: DeviceMesh) -> None:
    for block in model.layers.values():
        fully_shard(block, mesh=dp_mesh)
    fully_shard(model, mesh=dp_mesh)


def break_row_parallel(linear: nn.Module) -> None:
    """Before tensor parallelism: the row-parallel `linear` yields a Partial DTensor that
    its style then reduces; tensor-parallel rank 1 scales its partial by 1 + 1e-3 first."""
    forward = linear.forward

    def buggy(x: torch.Tensor) -> torch.Tensor:
        y = forward(x)
        assert isinstance(y, DTensor)
        factor = BUG_SCALE if y.device_mesh.get_local_rank() == 1 else 1.0
        return DTensor.from_local(
            y.to_local() * factor, y.device_mesh, y.placements, run_check=False
        )

    linear.forward = buggy
