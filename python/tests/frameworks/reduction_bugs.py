"""Injected data-parallel reduction bugs: one rank's partial gradient scaled by 1 + 1e-3
before the reduction (`scale`), or one reduction dropped (`drop`)."""

# No `from __future__ import annotations`: DDP checks the hook's annotations at run time.
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from .common import BUG_SCALE


def break_ddp_reduction(ddp: nn.Module, target: nn.Parameter, bug: str) -> None:
    """A DDP communication hook that averages every bucket as DDP does, except that
    `target`'s gradient is scaled on rank 1 first (`scale`) or not reduced (`drop`)."""
    world = dist.get_world_size()

    def hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        buffer = bucket.buffer().div_(world)
        views = dict(zip(map(id, bucket.parameters()), bucket.gradients(), strict=True))
        grad = views.get(id(target))
        kept = grad.clone() if grad is not None and bug == "drop" else None
        if grad is not None and bug == "scale" and dist.get_rank() == 1:
            grad.mul_(BUG_SCALE)
        fut = dist.all_reduce(buffer, async_op=True).get_future()

        def done(f: torch.futures.Future[list[torch.Tensor]]) -> torch.Tensor:
            out = f.value()[0]
            if kept is not None:
                views_after = dict(
                    zip(map(id, bucket.parameters()), bucket.gradients(), strict=True)
                )
                views_after[id(target)].copy_(kept)  # this parameter's all-reduce dropped
            return out

        return fut.then(done)

    ddp.register_comm_hook(None, hook)


def sum_ddp_gradients(ddp: nn.Module) -> None:
    """A DDP communication hook that all-reduces every bucket with a sum and never divides
    by the world size: gradients summed instead of averaged."""

    def hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    ddp.register_comm_hook(None, hook)


def break_fsdp_reduction(module: nn.Module, bug: str) -> None:
    """FSDP2's reduce-scatter of `module`'s gradients: rank 1's input scaled first (`scale`)
    or the reduction skipped, each rank keeping its own slice (`drop`)."""
    from torch.distributed.fsdp._fully_shard._fsdp_collectives import DefaultReduceScatter

    class Buggy(DefaultReduceScatter):
        def __call__(
            self,
            output_tensor: torch.Tensor,
            input_tensor: torch.Tensor,
            group: dist.ProcessGroup,
            op: Any,
            async_op: bool = False,
        ) -> Any:
            if bug == "scale":
                if dist.get_rank(group) == 1:
                    input_tensor.mul_(BUG_SCALE)
                return super().__call__(output_tensor, input_tensor, group, op, async_op)
            world, rank = dist.get_world_size(group), dist.get_rank(group)
            output_tensor.copy_(input_tensor.view(world, -1)[rank].view_as(output_tensor))
            return dist.barrier(group=group, async_op=async_op)

    module.set_custom_reduce_scatter(Buggy())
