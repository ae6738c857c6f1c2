"""``python -m ttrace --version``: the capture package's version, the same number as the
``ttrace`` CLI's and the explorer's."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ttrace",
        description="TTrace capture package. Capture with ttrace.capture in your training "
        "script; compare and inspect bundles with the ttrace CLI and ttrace-explorer.",
    )
    parser.add_argument("--version", action="version", version=f"ttrace {__version__}")
    parser.parse_args(argv)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
