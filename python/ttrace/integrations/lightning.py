"""Capture inside Lightning's `trainer.fit()`, its loop untouched: one callback.

    from ttrace.integrations.lightning import TTraceCallback
    trainer = pl.Trainer(..., callbacks=[TTraceCallback("bundle/")])    # ttrace
    trainer.fit(module, loader)

The Tracer is created when training starts, on the model the strategy built (its
`DistributedDataParallel` wrapper under `strategy="ddp"`, so the data-parallel layout and its
averaging are read from the job) and the torch optimizer Lightning configured. Each optimizer
step is one captured iteration numbered by `trainer.global_step`; the batches Lightning
accumulates (`accumulate_grad_batches`) are its micro-batches, in order. Lightning's automatic
optimization runs the last micro-batch's forward and backward inside `optimizer.step(closure)`;
the capture reads the gradients after the closure.

Under DDP Lightning replaces the loader's sampler with a `DistributedSampler`, which deals
rows to the ranks in turn: the callback reads that sampler (its `num_replicas`, `rank`,
`shuffle`, `drop_last`) and records the batch dimension as strided (`batch_rows`).

The capture closes when `fit()` ends; when it fails, the step in progress is written and the
rank file closed with a status record that says so, without a manifest (`ttrace diff
--partial` reads it). Under `ttrace capture` each run of `fit()` is one reference variant.
The class is made on first use: Lightning is imported only by its users. It derives from the
`Callback` of each Lightning package installed, so it serves `pytorch_lightning.Trainer` and
the unified package's `lightning.pytorch.Trainer` alike.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from collections.abc import Sequence
from typing import Any

from ttrace.capture import Tracer
from ttrace.capture.parallel_detect import detect_parallel

from .batch_rows import SamplerError, with_sampler_rows


class _Capture:
    """The Tracer and the step and micro-batch in progress, driven by the callback's hooks."""

    def __init__(self, out_dir: str | os.PathLike[str], options: dict[str, Any]) -> None:
        self.out_dir, self.options = out_dir, options
        self.tracer: Tracer | None = None
        self.step: contextlib.AbstractContextManager[Any] | None = None
        self.micro: contextlib.AbstractContextManager[Any] | None = None
        self.step_number, self.micro_batches = -1, 0

    def start(self, trainer: Any) -> None:
        if len(trainer.optimizers) != 1:
            raise ValueError(
                f"ttrace: one optimizer per Lightning module is supported, "
                f"found {len(trainer.optimizers)}"
            )
        optimizer = trainer.optimizers[0]
        model = trainer.strategy.model
        options = dict(self.options)
        rank, world = trainer.global_rank, trainer.world_size
        given = options.pop("parallel", None)
        info = given if given is not None else detect_parallel([model], rank, world)
        _check_reference_sampler(trainer)
        options["parallel"] = with_sampler_rows(info, trainer.train_dataloader)
        torch_optimizer = getattr(optimizer, "optimizer", optimizer)  # inside a wrapper
        self.tracer = Tracer(model, torch_optimizer, self.out_dir, **options)

    def batch_start(self, trainer: Any) -> None:
        if self.tracer is None:
            return
        if self.step is None:
            self.step_number, self.micro_batches = trainer.global_step, 0
            self.step = self.tracer.step(self.step_number)
            self.step.__enter__()
        # Numbered here: on one device Lightning calls `training_step` directly, not through
        # the module's forward, so forward calls cannot count micro-batches.
        self.micro = self.tracer.micro_batch(self.micro_batches)
        self.micro.__enter__()
        self.micro_batches += 1

    def batch_end(self, trainer: Any) -> None:
        self._exit_micro(None)
        if trainer.global_step != self.step_number:  # the optimizer stepped
            self._exit_step(None)

    def end(self) -> None:
        self._exit_micro(None)
        self._exit_step(None)  # fit() stopped inside a step (max_steps, a stop signal)
        if self.tracer is not None:
            self.tracer.close()

    def fail(self, exception: BaseException) -> None:
        """Write what the failed step captured and close this rank's file without the
        collective close (the other ranks may be gone)."""
        self._exit_micro(exception)
        self._exit_step(exception)
        if self.tracer is not None:
            self.tracer.abandon()

    def _exit_micro(self, exception: BaseException | None) -> None:
        micro, self.micro = self.micro, None
        if micro is not None:
            _exit(micro, exception)

    def _exit_step(self, exception: BaseException | None) -> None:
        step, self.step = self.step, None
        if step is not None:
            _exit(step, exception)


def _check_reference_sampler(trainer: Any) -> None:
    """A distributed Lightning run deals its training rows with a shuffled
    `DistributedSampler` (seeded by `seed_everything`); a one-device run of the same script
    reads them in order. Such a reference would see other rows than every candidate."""
    connector = trainer._accelerator_connector  # Lightning keeps these two flags only here
    if connector.is_distributed or not connector.use_distributed_sampler:
        return
    raise SamplerError(
        "not_distributed",
        f"this one-process run ({type(trainer.strategy).__name__}) reads its training rows in "
        "order, while Lightning shuffles a distributed run's rows with a DistributedSampler: "
        "run the reference with the candidate's strategy on one device "
        "(Trainer(strategy='ddp', devices=1)), so that it reads the candidate's rows",
    )


def _exit(context: contextlib.AbstractContextManager[Any], exception: BaseException | None) -> None:
    if exception is None:
        context.__exit__(None, None, None)
        return
    # The step re-raises what it is handed after writing what it holds; the exception is
    # Lightning's to handle.
    with contextlib.suppress(BaseException):
        context.__exit__(type(exception), exception, exception.__traceback__)


def _callback_bases() -> tuple[type, ...]:
    """The `Callback` classes of the Lightning packages installed: `pytorch_lightning` and the
    unified `lightning` (`lightning.pytorch`) each have their own, and each Trainer accepts only
    its own package's callbacks; the callback derives from both, so either Trainer takes it."""
    bases: list[type] = []
    for package in ("pytorch_lightning", "lightning.pytorch"):
        try:
            bases.append(importlib.import_module(package).Callback)
        except ImportError:
            continue
    if not bases:
        raise ImportError("ttrace: TTraceCallback needs pytorch_lightning or lightning installed")
    return tuple(bases)


@functools.cache
def _callback_type() -> type:
    """The callback class, made on first use (neither Lightning package is a dependency)."""

    class TTraceCallback(*_callback_bases()):  # type: ignore[misc]
        """Maps Lightning's optimizer steps to `tracer.step(global_step)` and its
        accumulated batches to micro-batches."""

        def __init__(
            self,
            out_dir: str | os.PathLike[str] = "ttrace-bundle",
            *,
            iterations: Sequence[int] | None = (0, 1),
            **tracer_options: Any,
        ) -> None:
            self.capture = _Capture(out_dir, {"iterations": iterations, **tracer_options})

        @property
        def tracer(self) -> Tracer | None:
            return self.capture.tracer

        def on_train_start(self, trainer: Any, pl_module: Any) -> None:
            self.capture.start(trainer)

        def on_train_batch_start(self, trainer: Any, *args: Any) -> None:
            self.capture.batch_start(trainer)

        def on_train_batch_end(self, trainer: Any, *args: Any) -> None:
            self.capture.batch_end(trainer)

        def on_train_end(self, trainer: Any, pl_module: Any) -> None:
            self.capture.end()

        def on_exception(self, trainer: Any, pl_module: Any, exc: BaseException) -> None:
            self.capture.fail(exc)

    return TTraceCallback


def __getattr__(name: str) -> Any:
    if name == "TTraceCallback":  # `from ttrace.integrations.lightning import TTraceCallback`
        return _callback_type()
    raise AttributeError(name)
