"""Capture inside Megatron-LM's `pretrain()`: its `train_step` wrapped, the loop untouched.

`pretrain()` (Megatron-LM's `megatron/training/training.py`) builds the model chunks (each
in Megatron-core's `DistributedDataParallel`) and the optimizer, then calls
`train_step(forward_step_func, data_iterator, model, optimizer, ...)` once per optimizer
step; `train_step` runs the micro-batches through Megatron-core's `forward_backward_func`
and steps the optimizer. Wrapping that function is the whole integration:

    import megatron.training.training as training
    from ttrace.integrations.megatron import traced_train_step       # ttrace
    training.train_step = traced_train_step(training.train_step, "bundle/")  # ttrace
    pretrain(train_valid_test_datasets_provider, model_provider, ...)

`pretrain()` looks `train_step` up in its module at each call, so the wrapper sees every
step. The Tracer is made at the first call, on the `model` chunks and the `optimizer` that
call is handed (Megatron-core's objects: the parallel layout, the distributed optimizer and
the gradient convention are read from them); each call is one captured iteration (0, 1, ...
from the first step after the wrapping), its micro-batches those of the schedule. `close()`
is called by the wrapper after the last captured iteration (`iterations=`, default the first
two), so nothing has to be added after `pretrain()`; a step that raises is written and the
rank file closed without a manifest (`Tracer.abandon`).

Megatron-LM itself is not a package this project installs (the `megatron-core` wheel holds
`megatron/core` only): the wrapper is tested with a `train_step` written as Megatron-LM's is,
on Megatron-core's own schedule (`python/tests/megatron/pretrain_step.py`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from ttrace.capture import Tracer


class TracedTrainStep:
    """`train_step` with a Tracer around each call (see the module's docstring)."""

    def __init__(
        self,
        train_step: Callable[..., Any],
        out_dir: str | os.PathLike[str],
        iterations: Sequence[int],
        options: dict[str, Any],
    ) -> None:
        functools.update_wrapper(self, train_step)
        self.train_step = train_step
        self.out_dir, self.options = out_dir, options
        self.iterations = sorted(int(i) for i in iterations)
        self.tracer: Tracer | None = None
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self.iterations or self.calls > self.iterations[-1]:
            return self.train_step(*args, **kwargs)  # past the capture: nothing to add
        if self.tracer is None:
            # Megatron-LM's order: (forward_step_func, data_iterator, model, optimizer, ...).
            model = kwargs["model"] if "model" in kwargs else args[2]
            optimizer = kwargs["optimizer"] if "optimizer" in kwargs else args[3]
            self.tracer = Tracer(
                model, optimizer, self.out_dir, iterations=self.iterations, **self.options
            )
        iteration, self.calls = self.calls, self.calls + 1
        try:
            with self.tracer.step(iteration):
                out = self.train_step(*args, **kwargs)
        except BaseException:
            self.tracer.abandon()
            raise
        if iteration == self.iterations[-1]:
            self.tracer.close()  # collective: every rank takes the same step
        return out

    def close(self) -> None:
        """Close the capture now (collective), for a run that stops before the last
        captured iteration."""
        if self.tracer is not None:
            self.tracer.close()


def traced_train_step(
    train_step: Callable[..., Any],
    out_dir: str | os.PathLike[str] = "ttrace-bundle",
    *,
    iterations: Sequence[int] = (0, 1),
    **options: Any,
) -> TracedTrainStep:
    """`train_step` wrapped to capture its first calls into `out_dir`; options go to
    `Tracer` (`modules=`, `role=`, `parallel=`, ...)."""
    return TracedTrainStep(train_step, out_dir, iterations, options)
