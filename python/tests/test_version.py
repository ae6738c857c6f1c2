"""One version number: python/ttrace/VERSION, as printed by the CLI, the explorer and the
Python package, and as released in the AppStream metadata."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from xml.etree import ElementTree

import pytest
from cli_paths import REPO_ROOT, ttrace_binary

VERSION = (REPO_ROOT / "python" / "ttrace" / "VERSION").read_text(encoding="ascii").strip()


def no_display_env() -> dict[str, str]:
    """The environment of an ssh session: no display and no Qt platform chosen."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    env["PYTHONPATH"] = str(REPO_ROOT / "python")
    return env


def printed_version(command: list[str]) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=no_display_env(), check=False
    )
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout.strip()


def test_version_file_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION), VERSION


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ([str(ttrace_binary("ttrace")), "--version"], "ttrace"),
        ([str(ttrace_binary("ttrace-explorer")), "--version"], "TTrace Explorer"),
        ([sys.executable, "-m", "ttrace", "--version"], "ttrace"),
    ],
    ids=["cli", "explorer", "python"],
)
def test_every_front_end_prints_the_version(command: list[str], name: str) -> None:
    assert printed_version(command) == f"{name} {VERSION}"


def test_package_attribute_is_the_version() -> None:
    import ttrace

    assert ttrace.__version__ == VERSION


def test_appstream_release_is_the_version() -> None:
    """The newest <release> of the metainfo must be added when VERSION changes."""
    template = REPO_ROOT / "packaging" / "explorer.metainfo.xml.in"
    releases = ElementTree.parse(template).getroot().findall("./releases/release")
    assert releases, f"{template}: no <release>"
    assert releases[0].get("version") == VERSION, f"{template}: add a <release> for {VERSION}"
