"""The few CUDA-only calls Megatron-core makes, answered on CPU, so that its real modules,
DDP, optimizers and schedules run on gloo. Test harness only: capture needs none of this.

- `torch.cuda.current_device()` is the device of every buffer Megatron allocates: CPU here;
- a literal `device="cuda"` (loss-token counters, optimizer scalars) becomes CPU;
- `Tensor.type()` (no argument) answers the CUDA type name: the mixed-precision optimizers
  sort parameters by it;
- `torch.cuda.current_stream()` (megatron-core 0.19 waits on CUDA-graph events before its
  gradient reduction) is a stream with nothing to wait for: on CPU every op has completed;
- the CUDA generator is the CPU one: on CPU every op, dropout included, draws from the CPU
  generator, so what Megatron does with "the CUDA generator" (seeding it, the model-parallel
  RNG tracker's forks, the states its activation recompute saves and restores) is done to the
  generator the ops draw from; Megatron's own tracker and recompute run unchanged;
- CUDA streams and events (the MoE all-to-all dispatcher copies its split sizes to the host on
  a side stream): one stream that is always current, events that are always complete;
- Transformer Engine's router GEMM: without TE, `moe_utils` never defines `te_general_gemm`
  (its import fallback forgets it); it is defined as None, which selects Megatron's own
  torch path;
- `maybe_move_tensor_to_cpu(t, as_numpy=True)` (the dispatcher's device-to-host copy of its
  split sizes) returns the numpy array for a tensor already on the CPU too, as it does for
  one on the GPU;
- Apex's fused layer-norm kernel is `F.layer_norm`, so the local spec keeps Megatron's own
  `FusedLayerNorm` module (which marks its weights `sequence_parallel`; the torch fallback
  refuses sequence parallelism).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

import torch

_FACTORIES = ("zeros", "ones", "empty", "tensor", "full", "arange")


def _cpu_device(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        device = kwargs.get("device")
        if device is not None and str(device).startswith("cuda"):
            kwargs["device"] = "cpu"
        return fn(*args, **kwargs)

    return wrapper


def _cuda_type_name(original: Callable[..., Any]) -> Callable[..., Any]:
    def type_(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        name = original(self, *args, **kwargs)
        if not args and not kwargs and isinstance(name, str) and name.startswith("torch."):
            return name.replace("torch.", "torch.cuda.", 1) if ".cuda." not in name else name
        return name

    return type_


class _LayerNormAffine(torch.autograd.Function):
    """Apex's `FusedLayerNormAffineFunction.apply(x, weight, bias, shape, eps)` on CPU."""

    @staticmethod
    def apply(x, weight, bias, shape, eps):  # type: ignore[override]
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        return torch.nn.functional.layer_norm(x, shape, weight, bias, eps)


def _host_copy(original: Callable[..., Any]) -> Callable[..., Any]:
    def move(tensor: Any, as_numpy: bool = False, record_stream: bool = False) -> Any:
        if torch.is_tensor(tensor) and not tensor.is_cuda and as_numpy:
            return tensor.numpy()
        return original(tensor, as_numpy=as_numpy, record_stream=record_stream)

    return move


class _CpuEvent:
    def synchronize(self) -> None:
        pass


class _CpuStream:
    """The one CPU "stream": work is done when it is issued."""

    def __new__(cls, *args: Any, **kwargs: Any) -> _CpuStream:
        global _STREAM
        if _STREAM is None:
            _STREAM = super().__new__(cls)
        return _STREAM

    def wait_stream(self, other: Any) -> None:
        pass

    def record_event(self, event: Any = None) -> _CpuEvent:
        return _CpuEvent()

    def synchronize(self) -> None:
        pass


_STREAM: _CpuStream | None = None


def _use_fused_layer_norm() -> None:
    from megatron.core.fusions import fused_layer_norm
    from megatron.core.models import backends
    from megatron.core.models.gpt import gpt_layer_specs
    from megatron.core.transformer import transformer_block

    fused_layer_norm.HAVE_FUSED_LAYER_NORM = True
    fused_layer_norm.FusedLayerNormAffineFunction = _LayerNormAffine
    gpt_layer_specs.LNImpl = fused_layer_norm.FusedLayerNorm
    backends.LNImpl = fused_layer_norm.FusedLayerNorm
    transformer_block.LayerNormImpl = fused_layer_norm.FusedLayerNorm


class _CompletedStream:
    """The current stream on CPU: every op has already run, so waiting is a no-op."""

    def wait_event(self, event: Any) -> None:
        del event

    def wait_stream(self, stream: Any) -> None:
        del stream

    def synchronize(self) -> None:
        pass


def _cpu_generator_as_cuda() -> None:
    """Megatron's calls of the CUDA generator, answered by the CPU generator: the one the
    CPU ops draw from (Megatron saves and restores both; here they are the same state)."""
    from megatron.core.tensor_parallel import random as mp_random

    def get_state(device: Any = "cuda", clone: bool = False, graph_safe: bool = False) -> Any:
        return torch.get_rng_state()  # a copy already

    def set_state(new_state: torch.Tensor, device: Any = -1, graph_safe: bool = False) -> None:
        torch.set_rng_state(new_state)

    torch.cuda.get_rng_state = lambda device="cuda": torch.get_rng_state()  # type: ignore[assignment]
    torch.cuda.random.get_rng_state = torch.cuda.get_rng_state  # type: ignore[assignment]
    torch.cuda.manual_seed = lambda seed: torch.manual_seed(seed)  # type: ignore[assignment]
    mp_random._get_cuda_rng_state = get_state
    mp_random._set_cuda_rng_state = set_state


def install() -> None:
    if getattr(torch, "_ttrace_cpu_stubs", False):
        return
    torch._ttrace_cpu_stubs = True  # type: ignore[attr-defined]
    torch.cuda.current_device = lambda: "cpu"  # type: ignore[assignment]
    torch.cuda.current_stream = lambda device=None: _CompletedStream()  # type: ignore[assignment]
    for name in _FACTORIES:
        setattr(torch, name, _cpu_device(getattr(torch, name)))
    torch.Tensor.type = _cuda_type_name(torch.Tensor.type)  # type: ignore[method-assign]
    torch.cuda.Stream = _CpuStream  # type: ignore[misc, assignment]
    torch.cuda.current_stream = lambda device=None: _CpuStream()  # type: ignore[assignment]
    torch.cuda.stream = lambda stream=None: contextlib.nullcontext()  # type: ignore[assignment]

    _cpu_generator_as_cuda()
    from megatron.core.transformer.moe import moe_utils

    if not hasattr(moe_utils, "te_general_gemm"):
        moe_utils.te_general_gemm = None
    from megatron.core.transformer.moe import token_dispatcher

    token_dispatcher.maybe_move_tensor_to_cpu = _host_copy(moe_utils.maybe_move_tensor_to_cpu)
    _use_fused_layer_norm()
