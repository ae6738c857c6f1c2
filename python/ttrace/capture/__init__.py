"""Capture side of ttrace: hooks, canonical names, inferred placements, seeded init,
perturbed reference variants, and bundle writing off the training thread."""

from .annotate import annotate
from .clip_record import record_gradient_clip
from .environment_record import declare_kernel
from .errors import TracerError
from .inference import PlacementInference
from .layout import Layout
from .naming import canonical_names
from .parallel_info import ParallelInfo
from .perturbation import Perturbation
from .precision import fp8_cast, machine_eps
from .seeded_init import seeded_init
from .tracer import Tracer

__all__ = [
    "Layout",
    "ParallelInfo",
    "Perturbation",
    "PlacementInference",
    "Tracer",
    "TracerError",
    "annotate",
    "canonical_names",
    "declare_kernel",
    "fp8_cast",
    "machine_eps",
    "record_gradient_clip",
    "seeded_init",
]
