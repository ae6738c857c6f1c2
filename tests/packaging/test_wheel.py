"""The capture package as an ML engineer installs it: an sdist and a wheel built from python/
alone, the wheel pip-installed into a virtual environment of its own, and the example's
capture run against that installed copy (the source tree's python/ is not on the path)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import zipfile
from email.parser import Parser
from importlib import metadata
from pathlib import Path

import pytest
from conftest import SOURCE_DIR, VERSION, build_dir, run

WHEEL = f"ttrace-{VERSION}-py3-none-any.whl"
SDIST = f"ttrace-{VERSION}.tar.gz"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build` on a copy of python/: the sdist, then the wheel built from the sdist
    (so the sdist alone must hold everything, VERSION included)."""
    work = tmp_path_factory.mktemp("dist")
    source = work / "python"
    shutil.copytree(
        SOURCE_DIR / "python",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build", ".*cache"),
    )
    # No isolation: setuptools comes pinned from the project's environment, not the network.
    run([sys.executable, "-m", "build", "--no-isolation", "-o", str(work / "dist"), str(source)])
    built = sorted(p.name for p in (work / "dist").iterdir())
    assert built == sorted([SDIST, WHEEL])
    return work / "dist"


def wheel_metadata(dist: Path) -> dict[str, list[str]]:
    with zipfile.ZipFile(dist / WHEEL) as wheel:
        text = wheel.read(f"ttrace-{VERSION}.dist-info/METADATA").decode()
        names = wheel.namelist()
    assert "ttrace/VERSION" in names and "ttrace/capture/__init__.py" in names, names
    message = Parser().parsestr(text)
    return {key: message.get_all(key) or [] for key in ("Version", "Requires-Dist")}


def test_wheel_declares_version_and_dependencies(dist: Path) -> None:
    meta = wheel_metadata(dist)
    assert meta["Version"] == [VERSION]
    requires = {r.split(";")[0].strip() for r in meta["Requires-Dist"] if "extra ==" not in r}
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip() for r in requires}
    assert {"torch", "numpy", "h5py"} <= names, requires
    torch = next(r for r in requires if r.startswith("torch"))
    # A floor, never a pin: the training job's own torch build must satisfy it as it is.
    assert ">=" in torch and "==" not in torch and "<" not in torch, torch


def test_wheel_holds_only_the_product(dist: Path) -> None:
    """The test-support package beside `ttrace` in python/ (ttrace_testing: fixtures, demo
    bundles, the bug zoo) is for development only: the wheel holds `ttrace` and its metadata."""
    with zipfile.ZipFile(dist / WHEEL) as wheel:
        tops = {name.split("/")[0] for name in wheel.namelist()}
    assert tops == {"ttrace", f"ttrace-{VERSION}.dist-info"}, tops


@pytest.fixture(scope="module")
def venv(dist: Path) -> Path:
    """A virtual environment that had only torch before, with the wheel installed by pip.

    torch (hundreds of MB) is installed once per set of declared dependencies and kept in the
    build folder; ttrace is removed and pip-installed from the wheel on every run, its other
    dependencies resolved by pip from what the wheel declares."""
    torch_pin = f"torch=={metadata.version('torch')}"
    requires = "\n".join(sorted(wheel_metadata(dist)["Requires-Dist"]))
    key = hashlib.sha256(f"{sys.version}\n{torch_pin}\n{requires}".encode()).hexdigest()[:16]
    cache = build_dir() / "tests" / "wheel-venv"
    venv = cache / key
    python = venv / "bin" / "python"
    for stale in cache.glob("*"):  # environments for other dependencies: a GB each
        if stale != venv:
            shutil.rmtree(stale, ignore_errors=True)
    if not (venv / ".torch-installed").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", str(venv)])
        # No .pyc compilation of torch's thousands of modules: most of the install's time.
        run([str(python), "-m", "pip", "install", "-q", "--no-compile", torch_pin], timeout=900)
        (venv / ".torch-installed").write_text(torch_pin)
    run([str(python), "-m", "pip", "uninstall", "-y", "-q", "ttrace"])
    run([str(python), "-m", "pip", "install", "-q", str(dist / WHEEL)], timeout=600)
    return venv


def venv_env(venv: Path) -> dict[str, str]:
    """Only the repository root on the path (for examples/), never its python/ folder."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(SOURCE_DIR)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_installed_package_is_the_wheel(venv: Path, tmp_path: Path) -> None:
    python = str(venv / "bin" / "python")
    probe = "import examples.gpt.train, ttrace; print(ttrace.__file__); print(ttrace.__version__)"
    where, version = run([python, "-c", probe], env=venv_env(venv), cwd=tmp_path).stdout.split()
    assert Path(where).is_relative_to(venv), where
    assert version == VERSION
    done = run([python, "-m", "ttrace", "--version"], env=venv_env(venv), cwd=tmp_path)
    assert done.stdout.strip() == f"ttrace {VERSION}"


def test_every_module_imports_with_the_declared_dependencies(venv: Path, tmp_path: Path) -> None:
    """Every module of the installed wheel imports in an environment that holds only torch and
    what the wheel declares: a dependency missing from the list (pyzmq was) fails here."""
    probe = (
        "import importlib, pkgutil, ttrace\n"
        "for m in pkgutil.walk_packages(ttrace.__path__, 'ttrace.'):\n"
        "    importlib.import_module(m.name)\n"
        "print('imported')\n"
    )
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in venv_env(venv).items() if k != "PYTHONPATH"}
    assert run([python, "-c", probe], env=env, cwd=tmp_path).stdout.strip() == "imported"


def test_example_captures_with_the_wheel(venv: Path, tmp_path: Path) -> None:
    """A reference and a 2-rank tensor-parallel candidate (torchrun, gloo), both captured by
    the installed wheel; the built CLI finds them valid and equal within tolerance."""
    env = venv_env(venv)
    example = ["-m", "examples.gpt.train", "--layers", "2", "--iterations", "1"]
    reference, candidate = tmp_path / "reference", tmp_path / "candidate"
    python, torchrun = str(venv / "bin" / "python"), str(venv / "bin" / "torchrun")
    perturbed = ["--reference", "--perturbations", "2"]
    run([python, *example, *perturbed, "--out", str(reference)], env=env, cwd=tmp_path)
    two_ranks = ["--standalone", "--nproc-per-node", "2"]
    run(
        [torchrun, *two_ranks, *example, "--tp", "2", "--out", str(candidate)],
        env=env,
        cwd=tmp_path,
    )
    ttrace = str(build_dir() / "bin" / "ttrace")
    run([ttrace, "validate", str(reference), str(candidate)])
    run([ttrace, "diff", str(reference), str(candidate)])
