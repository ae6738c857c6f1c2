"""Stage containers and what they hold, from canonical names alone (no process group): a
stage of a 4-layer model holding global layers 2-3 under a block, as Megatron's
`TransformerBlock` holds them, and two interleaved chunks."""

from __future__ import annotations

from torch import nn

from ttrace.capture.naming import canonical_names
from ttrace.capture.pipeline_stages import chunk_layers, describe, stage_containers


class Layer(nn.Module):
    def __init__(self, number: int) -> None:
        super().__init__()
        self.layer_number = number  # Megatron's 1-based global number
        self.mlp = nn.Linear(2, 2)


class Block(nn.Module):
    def __init__(self, numbers: list[int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(n) for n in numbers)
        self.final_norm = nn.LayerNorm(2)


class Stage(nn.Module):
    def __init__(self, numbers: list[int]) -> None:
        super().__init__()
        self.decoder = Block(numbers)


def test_block_holding_a_stage_slice_is_a_container() -> None:
    stage = Stage([3, 4])
    names = canonical_names([stage])
    found = {names.name(m): held for m, held in stage_containers(names, True).items()}
    assert found == {"decoder": "layers 2-3", "decoder.layers": "layers 2-3"}
    layers = chunk_layers(names, 0)
    assert (layers.prefix, layers.first, layers.last) == ("decoder.layers.", 2, 3)
    assert layers.layers[2] is stage.decoder.layers[0]


def test_no_containers_without_a_pipeline() -> None:
    assert stage_containers(canonical_names([Stage([1, 2])]), False) == {}


def test_interleaved_chunks_each_hold_their_own_slice() -> None:
    chunks = [Stage([1]), Stage([3])]
    names = canonical_names(chunks)
    found = sorted(
        (names.root_of[m], names.name(m), held) for m, held in stage_containers(names, True).items()
    )
    assert found == [
        (0, "decoder", "layers 0"),
        (0, "decoder.layers", "layers 0"),
        (1, "decoder", "layers 2"),
        (1, "decoder.layers", "layers 2"),
    ]


def test_describe_compresses_ranges() -> None:
    assert describe([5, 0, 1, 4]) == "layers 0-1, 4-5"
    assert describe([]) == "no layers"
