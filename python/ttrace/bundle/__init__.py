"""Trace bundle format v1: the writer side (see docs/bundle-format.md)."""

from .dtypes import DType
from .key import TensorKey
from .manifest import Manifest, write_manifest
from .placement import Placement
from .rank_record import RankRecord
from .writer import FORMAT, FORMAT_VERSION, BundleWriter, rank_file_name

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "BundleWriter",
    "DType",
    "Manifest",
    "Placement",
    "RankRecord",
    "TensorKey",
    "rank_file_name",
    "write_manifest",
]
