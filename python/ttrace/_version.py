"""The package version, kept apart so that submodules can import it without a cycle.

The number is read from the ``VERSION`` file beside this module: the one file that the C++
build (``project(VERSION)``), the DEB and the wheel's metadata all take it from.
"""

from pathlib import Path

__version__ = Path(__file__).with_name("VERSION").read_text(encoding="ascii").strip()
