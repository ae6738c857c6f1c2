"""``python -m ttrace --version``: the capture package's version, the same number as the
``ttrace`` CLI's and the explorer's. ``python -m ttrace serve ...``: the replay agent from
the bundles alone (``ttrace serve`` runs it). ``python -m ttrace capture ... -- CMD``: run
an unchanged training script as a capture (``ttrace capture`` runs it)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ._version import __version__


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "serve":
        from .agent.serve_cli import main as serve_main  # needs torch and pyzmq

        return serve_main(args[1:])
    if args and args[0] == "capture":
        from .launch.capture_command import main as capture_main

        return capture_main(args[1:])
    parser = argparse.ArgumentParser(
        prog="python -m ttrace",
        description="TTrace capture package. Capture with ttrace.capture in your training "
        "script; compare and inspect bundles with the ttrace CLI and ttrace-explorer; "
        "`python -m ttrace serve --help`: relaunch a candidate from its bundles to localize.",
    )
    parser.add_argument("--version", action="version", version=f"ttrace {__version__}")
    parser.parse_args(args)
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
