"""Capture inside torchtitan's `Trainer.train()`, its loop untouched: two lines.

    from ttrace.integrations.torchtitan import trace                  # ttrace
    trainer = config.build()                  # torchtitan's Trainer, as its train.py builds it
    trace(trainer, "bundle/")                                          # ttrace
    trainer.train()

`trace` wraps three methods of this trainer instance (torchtitan's files and class are
untouched): `train_step`, which `train()` calls once per optimizer step after advancing
`trainer.step` (torchtitan's step counter, 1 for the first step: the captured iteration's
number); `forward_backward_step`, which `train_step` calls once per gradient-accumulation
micro-batch (numbered in order within the step); and `train`, after which the capture closes
(collective), or, when it raises, each rank's file is closed with a status record that says
so, without a manifest (`ttrace diff --partial` reads it).

The Tracer is made at the first step, after torchtitan has loaded any checkpoint, on
`trainer.model_parts` (FSDP2 / DTensor tensor-parallel modules: the layout and the gradient
convention are read from them, with FSDP's divide factor as torchtitan sets it) and the torch
optimizer inside `trainer.optimizers`. It closes after the last captured iteration, so the
rest of training runs without hooks.

`init_seed` (default 0) re-initializes the weights with `ttrace.capture.seeded_init` when
`trace` is called: torchtitan draws its initial weights on each rank from DTensor's random
generator, which gives the same full tensor on every layout only on CUDA-like devices.
`init_seed=None` keeps torchtitan's weights (a run that loads a checkpoint, which replaces them
anyway).

torchtitan's Hugging Face text loader gives each data-parallel rank its own slice of the
documents (`split_dataset_by_node`), so the global batch depends on the data-parallel degree
and no one-process reference sees it: `trace` refuses it on a data-parallel candidate
(`SamplerError`, code `split_by_rank`). A loader that deals each rank its contiguous slice of
every global batch fits (docs/integrations.md).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from ttrace.capture import Tracer, seeded_init

from .batch_rows import SamplerError


class TitanCapture:
    """The Tracer around one torchtitan Trainer's steps (see the module's docstring)."""

    def __init__(
        self,
        trainer: Any,
        out_dir: str | os.PathLike[str],
        iterations: Sequence[int],
        options: dict[str, Any],
    ) -> None:
        self.trainer, self.out_dir, self.options = trainer, out_dir, options
        self.iterations = sorted(int(i) for i in iterations)
        self.tracer: Tracer | None = None
        self.micro_batches = 0
        self.done = False
        trainer.train_step = self._wraps(trainer.train_step, self.train_step)
        trainer.forward_backward_step = self._wraps(
            trainer.forward_backward_step, self.forward_backward_step
        )
        trainer.train = self._wraps(trainer.train, self.train)

    @staticmethod
    def _wraps(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
        wrapped = functools.partial(wrapper, original)
        functools.update_wrapper(wrapped, original)
        return wrapped

    def _start(self) -> Tracer:
        parts = list(self.trainer.model_parts)
        optimizers = list(self.trainer.optimizers.optimizers)
        if len(optimizers) != 1 or len(parts) != 1:
            # Several model parts per rank (pipeline stages): one optimizer each, which one
            # Tracer does not step together yet.
            raise ValueError(
                f"ttrace: one model part per rank is supported, this rank has {len(parts)} "
                f"model parts and {len(optimizers)} optimizers"
            )
        check_data_order(getattr(self.trainer, "dataloader", None))
        return Tracer(
            parts, optimizers[0], self.out_dir, iterations=self.iterations, **self.options
        )

    def train_step(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        step = int(self.trainer.step)  # advanced by train() before each call
        if self.done or not self.iterations or step > self.iterations[-1]:
            return original(*args, **kwargs)
        if self.tracer is None:
            self.tracer = self._start()
        self.micro_batches = 0
        with self.tracer.step(step):
            out = original(*args, **kwargs)
        if step == self.iterations[-1]:
            self.close()  # collective: every rank takes the same step
        return out

    def forward_backward_step(self, original: Callable[..., Any], **kwargs: Any) -> Any:
        tracer = self.tracer
        if tracer is None or self.done or self.trainer.parallel_dims.pp_enabled:
            # Pipeline schedules run several micro-batches per call: the Tracer counts the
            # stage's forward calls instead.
            return original(**kwargs)
        micro, self.micro_batches = self.micro_batches, self.micro_batches + 1
        with tracer.micro_batch(micro):
            return original(**kwargs)

    def train(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            out = original(*args, **kwargs)
        except BaseException:
            self.abandon()
            raise
        self.close()  # training ended before the last captured iteration
        return out

    def close(self) -> None:
        """Close the capture (collective: every rank calls it)."""
        if self.tracer is not None and not self.done:
            self.tracer.close()
        self.done = True

    def abandon(self) -> None:
        """Training failed: write what the step captured and close this rank's file without
        the collective close (other ranks may be gone)."""
        if self.tracer is not None and not self.done:
            self.tracer.abandon()
        self.done = True


def check_data_order(dataloader: Any) -> None:
    """Refuse a torchtitan loader whose global batch depends on the data-parallel degree."""
    dataset = getattr(dataloader, "dataset", None)
    if getattr(dataloader, "dp_world_size", 1) <= 1 or dataset is None:
        return
    from torchtitan.hf_datasets.text_datasets import HuggingFaceTextDataset

    if isinstance(dataset, HuggingFaceTextDataset):
        raise SamplerError(
            "split_by_rank",
            "torchtitan's HuggingFaceTextDataset gives each data-parallel rank its own slice "
            "of the documents (split_dataset_by_node), so the global batch depends on the "
            "data-parallel degree and no one-process reference reads it; capture with a "
            "loader that deals each rank its contiguous slice of every global batch "
            "(docs/integrations.md, torchtitan)",
        )


def trace(
    trainer: Any,
    out_dir: str | os.PathLike[str] = "ttrace-bundle",
    *,
    iterations: Sequence[int] = (1, 2),
    init_seed: int | None = 0,
    **options: Any,
) -> TitanCapture:
    """Capture torchtitan `trainer`'s steps `iterations` (its `trainer.step` numbers, from 1)
    into `out_dir`; options go to `Tracer` (`modules=`, `kinds=`, ...)."""
    if init_seed is not None:
        seeded_init(list(trainer.model_parts), seed=init_seed)
    return TitanCapture(trainer, out_dir, iterations, options)
