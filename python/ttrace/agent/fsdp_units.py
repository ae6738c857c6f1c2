"""Replaying a module whose parameters FSDP2 holds sharded.

Between steps FSDP2 keeps each unit's parameters as shards (DTensors split over data
parallel); only the unit's own forward gathers them. The agent feeds the reference's values
into those shards (each rank its piece, `dtensor_local`). A module that is not itself an
FSDP unit (an MLP inside a sharded decoder layer, the final norm under the root) never
gathers its parameters when called alone, so its unit is unsharded around the replay (an
all-gather over the data-parallel group, on every rank, as the job's own forward does)
and resharded after it, before the state guard puts the job's values back.

The replay's parameter gradients stay on the gathered parameters, unreduced (or, for a unit
replayed whole, pass through its own reduce-scatter); the sharded parameters' gradients,
which capture records, are the gradient reduction's, so a backward replay of a module whose
parameters FSDP2 holds returns the input gradients only.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn


def _fsdp_module_type() -> type | None:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch without FSDP2
        return None
    return FSDPModule


def owning_unit(module: nn.Module, roots: Iterable[nn.Module]) -> nn.Module | None:
    """The FSDP unit that gathers `module`'s parameters when the job runs it: None when
    `module` is a unit itself (its own forward gathers them) or no unit holds it."""
    fsdp = _fsdp_module_type()
    if fsdp is None or isinstance(module, fsdp):
        return None
    for root in roots:
        parents = {child: parent for parent in root.modules() for child in parent.children()}
        if module is not root and module not in parents:
            continue
        node = parents.get(module)
        while node is not None:
            if isinstance(node, fsdp):
                return node
            node = parents.get(node)
    return None


def _lazy_init(roots: Iterable[nn.Module], fsdp: type) -> None:
    """FSDP2 settles which unit is the root at the first forward through it. A relaunch
    (`ttrace serve`) replays before any forward ran: a unit gathered alone first would
    then be taken for a root. Running the root's initialization first keeps it right (a
    no-op once a forward ran)."""
    for root in roots:
        if isinstance(root, fsdp):
            state = root._get_fsdp_state()  # type: ignore[operator]
            state._lazy_init()


class GatheredUnit:
    """Around one replay of `module`: its owning unit's parameters gathered while it runs
    (`gather`), and every unit of the module sharded again after (`release`, also after a
    failure). The root unit keeps its parameters gathered after its forward (FSDP2 skips
    that reshard for training); between replays every parameter must be the shard capture
    named and the state guard restores."""

    def __init__(self, module: nn.Module, roots: Iterable[nn.Module]) -> None:
        self.fsdp = _fsdp_module_type()
        self.roots = list(roots)
        self.module = module
        self.unit = owning_unit(module, self.roots)

    @property
    def shards_parameters(self) -> bool:
        """Whether FSDP2 holds the module's parameters (it is a unit, or inside one)."""
        return self.fsdp is not None and (
            self.unit is not None or isinstance(self.module, self.fsdp)
        )

    def settle(self) -> None:
        """Before the reference's values go in: FSDP2's root initialized, every unit set to
        reshard after its forward (FSDP2's own switch for the root, which otherwise keeps
        its parameters gathered for the backward of a training step; a replay's forward
        is not followed by one), and every unit sharded, so each parameter is the shard
        capture named. Resharding frees gathered copies only: no collective."""
        if self.fsdp is None:
            return
        _lazy_init(self.roots, self.fsdp)
        units = [u for root in self.roots for u in root.modules() if isinstance(u, self.fsdp)]
        for unit in units:
            unit.set_reshard_after_forward(True, recurse=False)  # type: ignore[operator]
        for unit in units:
            unit.reshard()  # type: ignore[operator]  # FSDPModule.reshard

    def gather(self) -> None:
        if self.unit is not None:
            self.unit.unshard()  # type: ignore[operator]  # FSDPModule.unshard

    def release(self) -> None:
        if self.fsdp is None:
            return
        units = [m for m in self.module.modules() if isinstance(m, self.fsdp)]
        for unit in [*units, *([self.unit] if self.unit is not None else [])]:
            unit.reshard()  # type: ignore[operator]  # FSDPModule.reshard: no-op if sharded
