"""Capture an accelerate training loop: the loop stays as written, with two lines around it.

    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    tracer = trace(accelerator, model, optimizer, "bundle/")       # ttrace
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(loss_of(model, batch))
            optimizer.step()
            optimizer.zero_grad()
    tracer.close()                                                  # ttrace

The Tracer sees the module accelerate prepared (its `DistributedDataParallel` or FSDP
wrapper: the data-parallel layout and reduction are read from the job) and the torch
optimizer inside accelerate's wrapper, whose `step` runs only when accelerate synchronizes
gradients. So each real optimizer step is one captured iteration (0, 1, ... from the first
forward after `trace`), and the batches `accumulate` gathers before it are that step's
micro-batches. Under `ttrace capture` each run of the loop is one reference variant.
"""

from __future__ import annotations

import os
from typing import Any

from ttrace.capture import Tracer


def trace(
    accelerator: Any,
    model: Any,
    optimizer: Any,
    out_dir: str | os.PathLike[str] = "ttrace-bundle",
    **options: Any,
) -> Tracer:
    """A started Tracer on the prepared `model` and `optimizer`; options go to `Tracer`
    (`iterations=` defaults to the first two optimizer steps). Call `close()` after the loop
    on every process."""
    del accelerator  # the prepared objects carry everything; kept for a stable signature
    options.setdefault("iterations", [0, 1])
    tracer = Tracer(model, getattr(optimizer, "optimizer", optimizer), out_dir, **options)
    tracer.start()
    return tracer
