"""What torchtitan 0.3.0 needs to run on CPU processes over gloo. Device choices only: none
replaces a reduction, a placement or any of the model's math.

- `torchtitan.tools.utils.device_type` is "cuda" whenever no accelerator is found (its
  fallback); `ParallelDims.build_mesh` builds its world mesh on it, so it is "cpu" here.
- The Llama 3 configs' FlexAttention has no backward on CPU (torch raises
  "FlexAttention does not support backward on CPU"), and the varlen backend is CUDA only;
  each block's inner attention is torchtitan's own `ScaledDotProductAttention` (causal), which
  torchtitan's trainer documents as the maskless backend (one document per row: the same
  attention the block mask would give).
- Gloo has no `ReduceOp.PREMUL_SUM`, the reduce-scatter FSDP2 runs for a gradient divide
  factor on NCCL; FSDP2's own `set_force_sum_reduction_for_comms(True)` makes it a sum followed
  by the division by the same factor (1 as torchtitan sets it: a plain sum).
"""

from __future__ import annotations

import os
import socket
from typing import Any


def use_cpu_device() -> None:
    import torchtitan.distributed.parallel_dims as parallel_dims

    parallel_dims.device_type = "cpu"


def causal_sdpa_attention(model_config: Any) -> None:
    """Every block of `model_config` attends with torchtitan's causal SDPA module."""
    from torchtitan.models.common.attention import ScaledDotProductAttention

    for layer in model_config.layers:
        layer.attention.inner_attention = ScaledDotProductAttention.Config()


def gloo_sum_reduction(model: Any) -> None:
    from torch.distributed.fsdp import FSDPModule

    for module in model.modules():
        if isinstance(module, FSDPModule):
            module.set_force_sum_reduction_for_comms(True)


def use_cpu_trainer() -> None:
    """What torchtitan's `Trainer` needs besides `use_cpu_device` to run on CPU processes.

    - The device: `torchtitan.tools.utils` picks "cuda" and `torch.cuda` when no accelerator
      is found; `Trainer.__init__` sets its device from them and builds the weights on it, and
      the modules that imported them at import time (`parallel_dims`, `distributed.utils`,
      `components.metrics`) use them too: "cpu" and `torch.cpu` in each, except that
      `distributed.utils` passes `device_module.current_device()` to `barrier(device_ids=...)`
      (after the first step), a device index, where `torch.cpu.current_device()` is the
      string "cpu": there it is index 0 (`CpuDeviceModule`; gloo's barrier ignores it).
    - The process group: `init_distributed` would pick NCCL for "cuda"; it skips its own
      initialization when one exists, so gloo is initialized first (one process: world 1).
    - The metrics' `DeviceMemoryMonitor` reads CUDA memory statistics (`get_device_name`,
      `get_device_properties`, `memory_stats`), which `torch.cpu` has not: a monitor that
      reports no memory. It only feeds the log line.

    Not a device choice, a version gap on any device: torchtitan 0.3.0's `train()` calls
    `torch.distributed.set_timeout(timeout, group)` after the first step (`set_pg_timeouts`,
    to shorten the process groups' timeouts), which torch 2.13.0 does not have; its
    `distributed_c10d._set_pg_timeout(timeout, group)` does the same and stands in for it.
    """
    import torch
    import torch.distributed as dist
    import torchtitan.components.metrics as metrics
    import torchtitan.distributed.utils as dist_utils
    import torchtitan.tools.utils as tools_utils

    use_cpu_device()
    for module in (tools_utils, dist_utils, metrics):
        module.device_type, module.device_module = "cpu", torch.cpu
    dist_utils.device_module = CpuDeviceModule()
    metrics.build_device_memory_monitor = CpuMemoryMonitor
    if not hasattr(dist, "set_timeout"):
        dist.set_timeout = dist.distributed_c10d._set_pg_timeout  # type: ignore[attr-defined]
    if not dist.is_initialized():
        for name, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
            os.environ.setdefault(name, value)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))
        dist.init_process_group("gloo")


class CpuDeviceModule:
    """`torch.cpu` with the device index a CUDA module would give."""

    def __getattr__(self, name: str) -> Any:
        import torch

        return getattr(torch.cpu, name)

    def current_device(self) -> int:
        return 0


class CpuMemoryMonitor:
    """`DeviceMemoryMonitor`'s interface with nothing measured (CPU processes)."""

    device_name = "cpu"
    device_capacity_gib = 0.0

    def get_peak_stats(self) -> Any:
        from torchtitan.components.metrics import DeviceMemStats

        return DeviceMemStats(0.0, 0.0, 0.0, 0.0, 0, 0)

    def reset_peak_stats(self) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
