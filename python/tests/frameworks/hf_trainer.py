"""Hugging Face `Trainer.train()` on a tiny Llama, its loop untouched: the user's script plus
two ttrace lines (ending in `# ttrace`). One process is the reference, torchrun with 2
processes the DDP candidate (gloo, CPU); `ttrace capture` decides the role and variant.

`--bug scale|drop` is the user's bug: a DDP communication hook, registered when training
begins, that scales rank 1's partial gradient of `layers.0.mlp.down_proj.weight` (or drops
its reduction). `--accumulate 2` accumulates two micro-batches per optimizer step.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from typing import Any

import torch
from torch.utils.data import Dataset
from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed

from ttrace.integrations.transformers import trace  # ttrace

from .common import BATCH, SEQ, STEPS, VOCAB, finish
from .hf_model import tiny_llama
from .reduction_bugs import break_ddp_reduction


class TokenRows(Dataset[dict[str, torch.Tensor]]):
    """Fixed random token rows; labels are the inputs (causal LM)."""

    def __init__(self, rows: int) -> None:
        g = torch.Generator().manual_seed(1234)
        self.ids = torch.randint(0, VOCAB, (rows, SEQ), generator=g)

    def __len__(self) -> int:
        return self.ids.shape[0]

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class BreakReduction(TrainerCallback):  # the injected bug, not part of the capture
    def __init__(self, trainer_ref: list[Trainer], bug: str) -> None:
        self.trainer_ref, self.bug = trainer_ref, bug

    def on_train_begin(self, *args: Any, **kwargs: Any) -> None:
        ddp = self.trainer_ref[0].model_wrapped
        target = ddp.module.model.layers[0].mlp.down_proj.weight
        break_ddp_reduction(ddp, target, self.bug)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="ttrace-bundle")
    p.add_argument("--bug", choices=["none", "scale", "drop"], default="none")
    p.add_argument("--accumulate", type=int, default=1)
    a = p.parse_args()
    torch.use_deterministic_algorithms(True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    set_seed(0)  # the same initial weights in every run and on every rank
    model = tiny_llama()
    args = TrainingArguments(
        output_dir=tempfile.mkdtemp(prefix="hf-trainer-"),
        per_device_train_batch_size=BATCH // world // a.accumulate,
        gradient_accumulation_steps=a.accumulate,
        max_steps=STEPS,
        learning_rate=1e-2,
        lr_scheduler_type="constant",
        use_cpu=True,
        ddp_backend="gloo" if world > 1 else None,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        dataloader_num_workers=0,
        seed=0,
    )
    trainer_ref: list[Trainer] = []
    bugs = [BreakReduction(trainer_ref, a.bug)] if a.bug != "none" and world > 1 else []
    trainer = Trainer(model=model, args=args, train_dataset=TokenRows(4 * BATCH), callbacks=bugs)
    trainer_ref.append(trainer)
    trace(trainer, a.out)  # ttrace
    trainer.train()


if __name__ == "__main__":
    main()
    finish()
