"""Identity of one captured tensor, and its dataset path inside a rank file."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

_VARIANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_PATH = re.compile(r"^/([^/]+)/iter_(\d+)/mb_(\d+|all)/([^/]+)/([^/]+)/([^/]+)$")


@dataclass(frozen=True)
class TensorKey:
    """``(variant, iteration, micro_batch, module, kind, index)``: the same in every rank file.

    The reader merges the shards of one logical tensor by this identity, so it is validated
    here, where a mistake is cheap to report, instead of turning up as a mysterious hole.
    ``micro_batch = -1`` means once per iteration (``mb_all``).
    """

    variant: str
    iteration: int
    micro_batch: int
    module: str
    kind: str
    index: str

    KINDS: ClassVar[tuple[str, ...]] = (
        "forward_input",
        "forward_output",
        "output_grad",
        "input_grad",
        "parameter",
        "param_grad",
        "main_grad",
        "param_after_step",
        "optimizer_state",
    )

    def __post_init__(self) -> None:
        if isinstance(self.index, int) and not isinstance(self.index, bool):
            # Output positions come naturally as ints; the path wants their decimal form.
            object.__setattr__(self, "index", str(self.index))
        if not isinstance(self.variant, str) or not _VARIANT.match(self.variant):
            raise ValueError(f"bad variant {self.variant!r}: expected e.g. 'nominal'")
        for name in ("iteration", "micro_batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an int, got {value!r}")
        if self.iteration < 0:
            raise ValueError(f"iteration must be >= 0, got {self.iteration}")
        if self.micro_batch < -1:
            raise ValueError(f"micro_batch must be >= 0, or -1 for mb_all, got {self.micro_batch}")
        if self.kind not in self.KINDS:
            raise ValueError(f"unknown kind {self.kind!r}; known: {', '.join(self.KINDS)}")
        for name in ("module", "index"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value or value in (".", ".."):
                raise ValueError(f"bad {name} {value!r}: must be a non-empty name")
            if "/" in value or "\0" in value:
                # A slash would silently create extra HDF5 groups and break the path layout.
                raise ValueError(f"bad {name} {value!r}: must not contain '/' or NUL")

    @property
    def path(self) -> str:
        """``/<variant>/iter_<I>/mb_<M>/<module>/<kind>/<index>``."""
        mb = "all" if self.micro_batch == -1 else str(self.micro_batch)
        return (
            f"/{self.variant}/iter_{self.iteration}/mb_{mb}/{self.module}/{self.kind}/{self.index}"
        )

    @classmethod
    def from_path(cls, path: str) -> TensorKey:
        match = _PATH.match(path)
        if not match:
            raise ValueError(f"not a tensor path: {path!r}")
        variant, iteration, mb, module, kind, index = match.groups()
        micro_batch = -1 if mb == "all" else int(mb)
        return cls(variant, int(iteration), micro_batch, module, kind, index)

    def with_variant(self, variant: str) -> TensorKey:
        return TensorKey(
            variant, self.iteration, self.micro_batch, self.module, self.kind, self.index
        )

    def __str__(self) -> str:
        return self.path
