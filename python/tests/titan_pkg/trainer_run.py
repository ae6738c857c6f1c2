"""torchtitan 0.3.0's own `Trainer` (its `train()`, `train_step`, gradient accumulation,
loss, `clip_grad_norm_`, optimizer container, LR scheduler, metrics) on the package's
`llama3_debugmodel_ce_loss` config cut to 2 layers and 16 tokens, run as torchtitan's
`train.py` runs it, with the two ttrace lines (they end in `# ttrace`) between building the
trainer and `trainer.train()`.

One process is the reference (`ttrace capture --reference` relaunches it per variant); under
torchrun, `--tp` ranks of tensor (and sequence) parallelism and the rest FSDP2 (`dp_shard`).
`--bug` injects one of `bugs.py`'s bugs into torchtitan's functions. CPU shims
(`cpu_shims.py`): device choices only.

The data is the user's part of a torchtitan job: a loader on torchtitan's
`ParallelAwareDataloader` whose dataset deals each data-parallel rank its contiguous slice of
every global batch (`GlobalBatchRows`), so that a one-process reference reads the same rows
in the same micro-batches (torchtitan's Hugging Face loader splits the documents by rank
instead, docs/integrations.md).
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import IterableDataset

from . import bugs, cpu_shims

cpu_shims.use_cpu_trainer()

from torchtitan.components.dataloader import ParallelAwareDataloader  # noqa: E402
from torchtitan.config import ParallelismConfig, TrainingConfig  # noqa: E402
from torchtitan.models.llama3.config_registry import llama3_debugmodel_ce_loss  # noqa: E402
from torchtitan.trainer import Trainer  # noqa: E402

from ttrace.integrations.torchtitan import trace  # noqa: E402  # ttrace

# The global batch (rows per optimizer step) and its micro-batches are the same in every run;
# each data-parallel rank reads GLOBAL_ROWS / (MICRO_BATCHES * dp) rows per micro-batch.
LAYERS, GLOBAL_ROWS, MICRO_BATCHES, SEQ, STEPS, VOCAB = 2, 8, 2, 16, 3, 2048


class GlobalBatchRows(IterableDataset[tuple[dict[str, torch.Tensor], torch.Tensor]]):
    """Rank r of n yields rows r*b .. (r+1)*b-1 of each global micro-batch of n*b rows; row k
    is a fixed draw of SEQ + 1 token ids (inputs, and labels shifted by one)."""

    def __init__(self, dp_rank: int, dp: int, local_rows: int) -> None:
        self.dp_rank, self.dp, self.local_rows = dp_rank, dp, local_rows

    def __iter__(self) -> Iterator[tuple[dict[str, torch.Tensor], torch.Tensor]]:
        global_rows = self.dp * self.local_rows
        for micro_batch in itertools.count():
            first = micro_batch * global_rows + self.dp_rank * self.local_rows
            for row in range(first, first + self.local_rows):
                g = torch.Generator().manual_seed(1000 + row)
                tokens = torch.randint(0, VOCAB, (SEQ + 1,), generator=g)
                yield {"input": tokens[:-1]}, tokens[1:]


class GlobalBatchLoader(ParallelAwareDataloader):
    @dataclass(kw_only=True, slots=True)
    class Config(ParallelAwareDataloader.Config):
        pass

    def __init__(
        self,
        config: Config,
        *,
        dp_world_size: int,
        dp_rank: int,
        local_batch_size: int,
        **kwargs: Any,
    ) -> None:
        dataset = GlobalBatchRows(dp_rank, dp_world_size, local_batch_size)
        super().__init__(
            dataset, dp_rank=dp_rank, dp_world_size=dp_world_size, batch_size=local_batch_size
        )


def tokenizer_folder() -> str:
    """A word-level tokenizer.json for the Trainer to load (the rows are token ids already)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    folder = tempfile.mkdtemp(prefix="titan-tokenizer-")
    vocab = {f"t{i}": i for i in range(VOCAB)}
    Tokenizer(WordLevel(vocab, unk_token="t0")).save(os.path.join(folder, "tokenizer.json"))
    return folder


def trainer_config(tp: int) -> Trainer.Config:
    config = llama3_debugmodel_ce_loss()
    assert config.model_spec is not None
    model = config.model_spec.model
    model.layers = model.layers[:LAYERS]  # type: ignore[attr-defined]
    cpu_shims.causal_sdpa_attention(model)
    dp = int(os.environ.get("WORLD_SIZE", "1")) // tp
    config.training = TrainingConfig(
        local_batch_size=GLOBAL_ROWS // (MICRO_BATCHES * dp),
        global_batch_size=GLOBAL_ROWS,
        seq_len=SEQ,
        steps=STEPS,
        max_norm=1.0,
        mixed_precision_param="float32",
        disable_cuda_graphs=True,
    )
    config.parallelism = ParallelismConfig(
        tensor_parallel_degree=tp, spmd_backend="partial_dtensor"
    )
    config.dataloader = GlobalBatchLoader.Config()
    config.hf_assets_path = tokenizer_folder()
    config.dump_folder = tempfile.mkdtemp(prefix="titan-dump-")
    config.debug.seed = 0
    return config


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--bug", choices=["none", "tp", "fsdp"], default="none")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    if args.bug == "fsdp":
        bugs.average_block_zero_gradients()
    trainer = Trainer(trainer_config(args.tp))  # what train.py's config.build() does
    if args.bug == "tp":
        bugs.break_row_parallel_reduction(trainer.model_parts[0].layers["0"].feed_forward.w2)
    cpu_shims.gloo_sum_reduction(trainer.model_parts[0])
    trace(trainer, args.out)  # ttrace
    try:
        trainer.train()
    finally:
        trainer.close()


if __name__ == "__main__":
    main()
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
