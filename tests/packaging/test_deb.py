"""The DEB as a user gets it: built by CPack from this build, unpacked into a throwaway root,
its dependencies resolved by apt against Debian's archive, its programs run on demo bundles."""

from __future__ import annotations

import os
import re
import shutil
import struct
from pathlib import Path

import pytest
from conftest import VERSION, build_dir, run

APP_ID = "io.github.ttrace.explorer"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256)
# Debian's runtime packages the programs need, by the libraries they link.
RUNTIME_PACKAGES = {
    "Qt 6 widgets": r"libqt6widgets6",
    "Qt 6 GUI (platform plugins)": r"libqt6gui6",
    "QCustomPlot": r"libqcustomplot2\.\d+-qt6",
    "HDF5": r"libhdf5-[\d-]+",
    "oneTBB": r"libtbb\d+",
    "ZeroMQ": r"libzmq\d+",
}


@pytest.fixture(scope="module")
def deb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("deb")
    cpack = os.environ.get("TTRACE_CPACK", "cpack")
    config = build_dir() / "CPackConfig.cmake"
    run([cpack, "-G", "DEB", "--config", str(config), "-B", str(out)], timeout=600)
    debs = sorted(out.glob("*.deb"))
    assert len(debs) == 1, debs
    assert debs[0].name == f"ttrace-explorer_{VERSION}_amd64.deb"
    return debs[0]


@pytest.fixture(scope="module")
def root(deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's files unpacked as dpkg would install them, in a throwaway folder."""
    root = tmp_path_factory.mktemp("root")
    run(["dpkg-deb", "-x", str(deb), str(root)])
    return root


def control_field(deb: Path, field: str) -> str:
    return run(["dpkg-deb", "--field", str(deb), field]).stdout.strip()


def test_control_fields(deb: Path) -> None:
    assert control_field(deb, "Package") == "ttrace-explorer"
    assert control_field(deb, "Version") == VERSION
    depends = [d.strip().split(" ")[0] for d in control_field(deb, "Depends").split(",")]
    for what, pattern in RUNTIME_PACKAGES.items():
        assert any(re.fullmatch(pattern, d) for d in depends), (what, depends)


def test_apt_resolves_the_dependencies(deb: Path) -> None:
    """Simulated (nothing is installed): apt resolves every Depends on this machine."""
    done = run(["apt-get", "install", "--simulate", str(deb)])
    assert re.search(rf"^Inst ttrace-explorer \({re.escape(VERSION)} ", done.stdout, re.M), (
        done.stdout
    )


def test_apt_resolves_the_dependencies_on_a_bare_debian(deb: Path, tmp_path: Path) -> None:
    """As on a Debian machine with nothing installed (an empty dpkg status): apt must find the
    whole dependency closure, Qt 6 and HDF5 included, in Debian's archive."""
    if not any(Path("/var/lib/apt/lists").glob("*_Packages")):
        run(["apt-get", "update", "-qq"], timeout=600)  # a fresh image ships no package lists
    empty_status = tmp_path / "status"
    empty_status.write_text("")
    done = run(
        ["apt-get", "install", "--simulate", "-o", f"Dir::State::status={empty_status}", str(deb)]
    )
    installed = set(re.findall(r"^Inst (\S+) ", done.stdout, re.M))
    assert "ttrace-explorer" in installed, done.stdout
    for what, pattern in RUNTIME_PACKAGES.items():
        assert any(re.fullmatch(pattern, p) for p in installed), (what, sorted(installed))


def test_installed_files(root: Path) -> None:
    usr = root / "usr"
    expected = [
        "bin/ttrace",
        "bin/ttrace-explorer",
        "bin/ttrace-index",
        f"share/applications/{APP_ID}.desktop",
        f"share/metainfo/{APP_ID}.metainfo.xml",
        f"share/icons/hicolor/scalable/apps/{APP_ID}.svg",
        "share/man/man1/ttrace.1.gz",
        "share/man/man1/ttrace-explorer.1.gz",
        "share/man/man1/ttrace-index.1.gz",
        "share/doc/ttrace-explorer/copyright",
        "share/doc/ttrace-explorer/changelog.gz",
    ] + [f"share/icons/hicolor/{n}x{n}/apps/{APP_ID}.png" for n in ICON_SIZES]
    missing = [p for p in expected if not (usr / p).is_file()]
    assert not missing, missing
    for n in ICON_SIZES:
        assert png_size(usr / f"share/icons/hicolor/{n}x{n}/apps/{APP_ID}.png") == (n, n)


@pytest.mark.parametrize("program", ["ttrace", "ttrace-explorer", "ttrace-index"])
def test_no_missing_library(root: Path, program: str) -> None:
    done = run(["ldd", str(root / "usr" / "bin" / program)])
    assert "not found" not in done.stdout, done.stdout


def test_man_pages_describe_the_programs(root: Path) -> None:
    man = root / "usr" / "share" / "man" / "man1"
    cli = run(["man", "--local-file", "--pager=cat", str(man / "ttrace.1.gz")]).stdout
    assert "validate" in cli and "diff" in cli and VERSION in cli
    explorer = run(["man", "--local-file", "--pager=cat", str(man / "ttrace-explorer.1.gz")])
    assert "--screenshot" in explorer.stdout
    index = run(["man", "--local-file", "--pager=cat", str(man / "ttrace-index.1.gz")])
    assert "RANK_FILE.h5" in index.stdout and "TTRACE_INDEX_TIMEOUT_S" in index.stdout


def test_desktop_entry_and_metainfo_validate(root: Path) -> None:
    if shutil.which("desktop-file-validate"):
        run(["desktop-file-validate", str(root / f"usr/share/applications/{APP_ID}.desktop")])
    if not shutil.which("appstreamcli"):
        pytest.skip("appstreamcli not installed")
    # The whole tree: the metainfo itself and the desktop entry it launches.
    run(["appstreamcli", "validate-tree", "--no-net", str(root)])


def test_lintian_clean(deb: Path) -> None:
    if not shutil.which("lintian"):
        pytest.skip("lintian not installed")
    done = run(["lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", str(deb)])
    assert not re.search(r"^[EW]: ", done.stdout, re.M), done.stdout


def test_installed_cli_opens_the_demo_bundles(root: Path, demo_bundles: tuple[Path, Path]) -> None:
    ttrace = str(root / "usr" / "bin" / "ttrace")
    reference, candidate = demo_bundles
    assert run([ttrace, "--version"]).stdout.strip() == f"ttrace {VERSION}"
    run([ttrace, "validate", str(reference), str(candidate)])
    # The candidate has an injected bug: the installed CLI must find it (exit 1: divergence).
    run([ttrace, "diff", str(reference), str(candidate)], expect=1)


def test_installed_explorer_renders_the_demo_bundles(
    root: Path, demo_bundles: tuple[Path, Path], tmp_path: Path
) -> None:
    explorer = str(root / "usr" / "bin" / "ttrace-explorer")
    # As over ssh: no display, no platform chosen; the explorer must pick offscreen itself.
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    shot = tmp_path / "explorer.png"
    reference, candidate = demo_bundles
    # Headless, the explorer exits as `ttrace diff` does: 1, the injected bug is found.
    run([explorer, "--screenshot", str(shot), str(reference), str(candidate)], env=env, expect=1)
    width, height = png_size(shot)
    assert width >= 800 and height >= 500, (width, height)


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height
