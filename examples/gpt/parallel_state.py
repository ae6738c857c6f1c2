"""Process groups of the example, laid out like Megatron-LM: tp varies fastest, then cp, then
dp, then pp. Expert parallelism subdivides data parallelism (ep consecutive dp ranks)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch.distributed as dist

from .config import ParallelConfig


@dataclass
class ParallelState:
    cfg: ParallelConfig
    rank: int
    tp_rank: int
    cp_rank: int
    dp_rank: int
    pp_rank: int
    groups: dict[str, object]
    # pp stage ranks of this rank's pipeline, index = pp rank
    pp_ranks: list[int]

    @property
    def ep_rank(self) -> int:
        return self.dp_rank % self.cfg.ep

    @property
    def edp_rank(self) -> int:
        return self.dp_rank // self.cfg.ep

    @property
    def is_first_stage(self) -> bool:
        return self.pp_rank == 0

    @property
    def is_last_stage(self) -> bool:
        return self.pp_rank == self.cfg.pp - 1

    def group(self, name: str) -> object | None:
        return self.groups.get(name)

    @staticmethod
    def rank_of(cfg: ParallelConfig, tp: int, cp: int, dp: int, pp: int) -> int:
        return tp + cfg.tp * (cp + cfg.cp * (dp + cfg.dp * pp))

    @classmethod
    def single(cls, cfg: ParallelConfig) -> ParallelState:
        """The reference: one process, no groups."""
        return cls(cfg, 0, 0, 0, 0, 0, {}, [0])

    @classmethod
    def build(cls, cfg: ParallelConfig) -> ParallelState:
        rank = dist.get_rank()
        if dist.get_world_size() != cfg.world_size:
            raise ValueError(
                f"world size {dist.get_world_size()} != tp*pp*dp*cp = {cfg.world_size}"
            )
        coords = {}
        for tp, cp, dp, pp in itertools.product(
            range(cfg.tp), range(cfg.cp), range(cfg.dp), range(cfg.pp)
        ):
            coords[cls.rank_of(cfg, tp, cp, dp, pp)] = (tp, cp, dp, pp)
        my_tp, my_cp, my_dp, my_pp = coords[rank]

        # A group is the set of ranks sharing a key; coordinates are (tp, cp, dp, pp).
        ep = cfg.ep
        keys = {
            "tp": lambda o: (o[1], o[2], o[3]),
            "cp": lambda o: (o[0], o[2], o[3]),
            "dp": lambda o: (o[0], o[1], o[3]),
            "dp_cp": lambda o: (o[0], o[3]),
            # fp8 amax is reduced over every rank holding a piece of the same tensor
            "amax": lambda o: (o[3],),
            "ep": lambda o: (o[0], o[1], o[3], o[2] // ep),
            "edp": lambda o: (o[0], o[1], o[3], o[2] % ep),
            "mp": lambda o: (o[1], o[2]),
        }
        groups: dict[str, object] = {}
        for name, key in keys.items():
            members: dict[tuple[int, ...], list[int]] = {}
            for r in sorted(coords):
                members.setdefault(key(coords[r]), []).append(r)
            # Every rank creates every group in the same order (new_group is collective).
            for k in sorted(members):
                g = dist.new_group(members[k])
                if rank in members[k]:
                    groups[name] = g
        # Megatron's embedding group: the first and last stage of each pipeline, which hold
        # the two copies of a tied embedding / output weight.
        for tp, cp, dp in itertools.product(range(cfg.tp), range(cfg.cp), range(cfg.dp)):
            if cfg.pp == 1:
                break
            ends = [cls.rank_of(cfg, tp, cp, dp, p) for p in (0, cfg.pp - 1)]
            g = dist.new_group(ends)
            if rank in ends:
                groups["embd"] = g
        pp_ranks = [cls.rank_of(cfg, my_tp, my_cp, my_dp, p) for p in range(cfg.pp)]
        return cls(cfg, rank, my_tp, my_cp, my_dp, my_pp, groups, pp_ranks)
