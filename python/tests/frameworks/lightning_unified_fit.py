"""`lightning_fit.py`'s training with the unified `lightning` package's imports
(`import lightning.pytorch as L`: its own `Trainer`, `LightningModule` and `Callback`
classes), the same tiny Llama, rows and steps: one process is the reference, torchrun with 2
processes the DDP candidate. The ttrace lines end in `# ttrace`, the callback passed alone
(not in a list), which Lightning takes only when it is one of its own `Callback`s.
"""

from __future__ import annotations

import os

import lightning.pytorch as L
import torch
from torch.utils.data import DataLoader

from ttrace.integrations.lightning import TTraceCallback  # ttrace

from .common import BATCH, STEPS, finish
from .hf_model import tiny_llama
from .hf_trainer import TokenRows

ACCUMULATE = 2


class CausalLM(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.model = tiny_llama()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self.model(**batch).loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


def main() -> None:
    torch.use_deterministic_algorithms(True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    L.seed_everything(0)
    module = CausalLM()
    loader = DataLoader(TokenRows(8 * BATCH), batch_size=2 * BATCH // world // ACCUMULATE)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=world,
        strategy="ddp",  # on one device too: the same DistributedSampler
        max_steps=STEPS,
        accumulate_grad_batches=ACCUMULATE,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=TTraceCallback("ttrace-bundle"),  # ttrace
    )
    trainer.fit(module, loader)


if __name__ == "__main__":
    main()
    finish()
