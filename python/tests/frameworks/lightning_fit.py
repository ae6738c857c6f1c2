"""Lightning's `trainer.fit()` on a tiny Llama, its loop untouched: the user's script plus one
callback (lines ending in `# ttrace`). One process is the reference, torchrun with 2
processes the DDP candidate (`strategy="ddp"`, gloo, CPU: Lightning replaces the loader's
sampler with a `DistributedSampler`); `ttrace capture` decides the role and variant.

`--bug scale|drop`: a DDP communication hook registered when training starts scales rank 1's
partial gradient of `layers.0.mlp.down_proj.weight` (or drops its reduction). `--fail-at N`:
training step N raises. `--strategy`: Lightning's (default `ddp`, also on one device).
`--devices N`: started as `python -m ...` (no torchrun), Lightning launches the N processes.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from ttrace.integrations.lightning import TTraceCallback  # ttrace

from .common import BATCH, STEPS, finish
from .hf_model import tiny_llama
from .hf_trainer import TokenRows
from .reduction_bugs import break_ddp_reduction


class CausalLM(pl.LightningModule):
    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.model = tiny_llama()
        self.fail_at = fail_at  # a training step that raises (`--fail-at`), else -1

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        if self.global_step == self.fail_at:
            raise RuntimeError(f"training step {self.fail_at} failed")
        return self.model(**batch).loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


class BreakReduction(pl.Callback):  # the injected bug, not part of the capture
    def __init__(self, bug: str) -> None:
        self.bug = bug

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        target = pl_module.model.model.layers[0].mlp.down_proj.weight
        break_ddp_reduction(trainer.strategy.model, target, self.bug)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="ttrace-bundle")
    p.add_argument("--bug", choices=["none", "scale", "drop"], default="none")
    p.add_argument("--accumulate", type=int, default=2)
    p.add_argument("--strategy", default="ddp")
    p.add_argument("--fail-at", type=int, default=-1)
    p.add_argument("--devices", type=int, default=0, help="0: torchrun's WORLD_SIZE")
    a = p.parse_args()
    torch.use_deterministic_algorithms(True)
    # `--devices N` without torchrun: Lightning's own launcher starts the other processes.
    world = a.devices or int(os.environ.get("WORLD_SIZE", "1"))
    pl.seed_everything(0)
    module = CausalLM(a.fail_at)
    loader = DataLoader(TokenRows(8 * BATCH), batch_size=2 * BATCH // world // a.accumulate)
    bugs = [BreakReduction(a.bug)] if a.bug != "none" and world > 1 else []
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=world,
        strategy=a.strategy,  # "ddp" on one device for the reference: the same sampler
        max_steps=STEPS,
        accumulate_grad_batches=a.accumulate,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[*bugs, TTraceCallback(a.out)],  # ttrace
    )
    trainer.fit(module, loader)


if __name__ == "__main__":
    main()
    finish()
