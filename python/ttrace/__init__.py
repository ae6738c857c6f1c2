"""TTrace Explorer's Python side: capture trace bundles for differential testing."""

from ._version import __version__
from .bundle import BundleWriter, Placement, TensorKey

__all__ = ["BundleWriter", "Placement", "TensorKey", "__version__"]
