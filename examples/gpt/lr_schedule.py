"""Learning-rate schedule: linear warm-up to the base rate over `warmup` steps, then constant
(warm-up 0: the base rate throughout). Its step is part of a checkpoint: a resumed run
continues at `start + iteration`, the schedule step the saved run had reached."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class LRSchedule:
    base_lr: float
    warmup: int = 0
    start: int = 0  # the schedule step of this run's iteration 0 (restored on resume)

    def lr(self, iteration: int) -> float:
        step = self.start + iteration
        if self.warmup <= 0 or step >= self.warmup:
            return self.base_lr
        return self.base_lr * (step + 1) / self.warmup
