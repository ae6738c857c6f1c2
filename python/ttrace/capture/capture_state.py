"""Where the training loop is: iteration, variant, micro-batch; and what to capture."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CaptureState:
    iterations: set[int] | None = None  # None: every iteration
    micro_batches: set[int] | None = None  # None: every micro-batch
    kinds: set[str] | None = None  # None: every kind
    iteration: int = 0
    variant: str = "nominal"
    variant_index: int = 0  # k of perturbed-k, 0 for nominal
    explicit_mb: int | None = None
    forward_mb: int = 0
    in_step: bool = False
    # forward calls per model chunk in this (iteration, variant); the micro-batch number
    mb_counter: dict[int, int] = field(default_factory=dict)
    seen_iterations: set[int] = field(default_factory=set)
    max_mb: int = -1
    params_done: set[tuple[str, int]] = field(default_factory=set)
    # A write failed and the job trains on (on_write_error="warn"): hooks copy nothing more.
    stopped: bool = False

    def reset_counters(self) -> None:
        self.mb_counter.clear()

    def wants_iteration(self) -> bool:
        return not self.stopped and (self.iterations is None or self.iteration in self.iterations)

    def wants(self, micro_batch: int) -> bool:
        if not self.wants_iteration():
            return False
        return micro_batch == -1 or self.micro_batches is None or micro_batch in self.micro_batches

    def wants_kind(self, kind: str) -> bool:
        return self.kinds is None or kind in self.kinds

    def note(self, micro_batch: int) -> None:
        self.seen_iterations.add(self.iteration)
        self.max_mb = max(self.max_mb, micro_batch)
