"""Capture inside Hugging Face `Trainer.train()`, its loop untouched: two lines.

    from ttrace.integrations.transformers import trace
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trace(trainer, "bundle/")                      # ttrace
    trainer.train()

The Tracer is created when training begins, on the model the Trainer wrapped (its
`DistributedDataParallel` or FSDP wrapper, so the data-parallel layout and its gradient
reduction are read from the job) and the optimizer it built. Each optimizer step is one
captured iteration numbered by `state.global_step`; the micro-batches the Trainer
accumulates (`gradient_accumulation_steps`) are the step's micro-batches, in order. The
capture is closed when training ends; if training fails, the step in progress is written
and the rank file closed with a record that says so (as any Tracer does at exit).

Run the script under `ttrace capture` for a reference with perturbed variants: each run of
the Trainer is one variant (`ttrace.capture.variant_run`).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ttrace.capture import Tracer

if TYPE_CHECKING:
    from transformers import Trainer, TrainerControl, TrainerState, TrainingArguments


@functools.cache
def _callback_type() -> type:
    """The callback class, made on first use: `transformers` is imported only by those who
    use this integration (the capture package does not depend on it)."""
    from transformers import TrainerCallback

    class TTraceCallback(TrainerCallback):  # type: ignore[misc,valid-type]
        """Maps the Trainer's optimizer steps to `tracer.step(global_step)`."""

        def __init__(
            self,
            trainer: Trainer,
            out_dir: str | os.PathLike[str] = "ttrace-bundle",
            *,
            iterations: Sequence[int] | None = (0, 1),
            **tracer_options: Any,
        ) -> None:
            self.trainer = trainer
            self.out_dir = out_dir
            self.iterations = iterations
            self.options = tracer_options
            self.tracer: Tracer | None = None
            self._step: contextlib.AbstractContextManager[Any] | None = None

        def on_train_begin(
            self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
        ) -> None:
            # `model_wrapped` is the DDP/FSDP module accelerate built; the optimizer's own
            # `optimizer` is the torch optimizer inside accelerate's wrapper.
            optimizer = self.trainer.optimizer
            self.tracer = Tracer(
                self.trainer.model_wrapped,
                getattr(optimizer, "optimizer", optimizer),
                self.out_dir,
                iterations=self.iterations,
                **self.options,
            )

        def on_step_begin(
            self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
        ) -> None:
            if self.tracer is not None:
                self._step = self.tracer.step(state.global_step)
                self._step.__enter__()

        def on_step_end(
            self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
        ) -> None:
            step, self._step = self._step, None
            if step is not None:
                step.__exit__(None, None, None)

        def on_train_end(
            self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kw: Any
        ) -> None:
            self.close()

        def close(self) -> None:
            """Close the capture (collective: every rank calls it, as `on_train_end` does)."""
            step, self._step = self._step, None
            if step is not None:  # training stopped inside a step (max_steps, a stop signal)
                step.__exit__(None, None, None)
            if self.tracer is not None:
                self.tracer.close()

    return TTraceCallback


def trace(
    trainer: Trainer, out_dir: str | os.PathLike[str] = "ttrace-bundle", **options: Any
) -> Any:
    """Capture `trainer.train()` into `out_dir`; options go to `Tracer` (e.g. `iterations=`,
    `modules=`, `role=`, `perturbations=` for a loop run on its own). Returns the callback
    (a `TrainerCallback`)."""
    callback = _callback_type()(trainer, out_dir, **options)
    trainer.add_callback(callback)
    return callback


def __getattr__(name: str) -> Any:
    if name == "TTraceCallback":  # `from ttrace.integrations.transformers import TTraceCallback`
        return _callback_type()
    raise AttributeError(name)
