"""Where a traced step's extra time goes, accumulated per phase (seconds).

On the training threads (wall time, since waiting is what stalls the job):
- `hooks`: everything inside capture hooks, which includes the next three;
- `host_copy`: copying captured tensors to host memory (`to_host`);
- `queue`: handing them to the writer, including back-pressure waits under the memory cap;
- `inference`: placement inference (the rest of `hooks` is naming and bookkeeping).
On the writer thread (its own CPU time, `time.thread_time`, which it takes from the job's
cores; waits are not counted):
- `writer_cpu`: encoding and writing tensors into the rank file;
- `writer_flush_cpu`: flushing the file and rewriting the status record at durable points.

Reading a clock costs tens of nanoseconds against microseconds per hook, so it is always on;
`snapshot()` copies the totals, `delta` of two snapshots gives one step's.
"""

from __future__ import annotations

import threading

PHASES = ("hooks", "host_copy", "queue", "inference", "writer_cpu", "writer_flush_cpu")


class PhaseTimes:
    def __init__(self) -> None:
        self._totals = dict.fromkeys(PHASES, 0.0)
        self._lock = threading.Lock()

    def add(self, phase: str, seconds: float) -> None:
        # Hooks may run on autograd's device threads as well as the training thread.
        with self._lock:
            self._totals[phase] += seconds

    def snapshot(self) -> dict[str, float]:
        with self._lock:
            return dict(self._totals)

    @staticmethod
    def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
        return {k: after[k] - before.get(k, 0.0) for k in after}
