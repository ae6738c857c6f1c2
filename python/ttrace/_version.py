"""The package version, kept apart so that submodules can import it without a cycle."""

__version__ = "0.1.0"
