#!/usr/bin/env bash
# Installs what is missing (Debian packages, the Python virtual environment) and builds.
# Sourced by demo.sh and test.sh; safe to run any number of times.
set -euo pipefail

TTRACE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TTRACE_BUILD="${TTRACE_ROOT}/build"
TTRACE_VENV="${TTRACE_ROOT}/.venv"
TTRACE_PY="${TTRACE_VENV}/bin/python"

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  qt6-base-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libhdf5-dev hdf5-tools zlib1g-dev libeigen3-dev libtbb-dev nlohmann-json3-dev
  libzmq3-dev cppzmq-dev
  xvfb python3-venv
  # The sanitizer build and the fuzz targets (CMakePresets.json, preset asan): clang, its
  # sanitizer runtimes and libFuzzer (-fsanitize=fuzzer).
  clang libclang-rt-14-dev libfuzzer-14-dev
  # The install tests: build the DEB, check it (dpkg-shlibdeps, Lintian, AppStream, desktop
  # entry) and read its man pages (help2man writes them at build time).
  dpkg-dev fakeroot lintian appstream desktop-file-utils help2man man-db
  # ttrace-mpi and its test (ctest -L mpi): Debian's Open MPI.
  libopenmpi-dev openmpi-bin
  # The explorer's "Connect to GPU Host" test runs its own sshd on a loopback port.
  openssh-server openssh-client
)
# torch is always pinned: an unpinned torch pulls gigabytes of CUDA packages.
# transformers and the packages it loads, pinned: the framework tests build its Llama;
# accelerate runs its Trainer (the integration tests); pytorch-lightning and the packages it
# needs at the versions tested, for the Lightning integration's tests.
# pyzmq carries the localize agent's sockets; build and setuptools make the sdist and the wheel
# (python -m build --no-isolation).
PIP_PACKAGES=(torch==2.13.0 "h5py>=3.8" "numpy>=1.24" "pytest>=7" "ruff>=0.5" pyzmq==27.1.0
  transformers==5.23.0 huggingface_hub==2.4.0 tokenizers==0.23.3 safetensors==0.8.0
  accelerate==1.15.0 psutil==7.2.2
  pytorch-lightning==2.6.6 lightning-utilities==0.15.3 torchmetrics==1.9.0 fsspec==2026.9.0
  tqdm==4.70.1
  build==1.6.1 setuptools==84.2.1)

# Megatron-core, pinned and without its dependencies (they pull CUDA packages); at import on
# CPU it needs only packaging and PyYAML (pinned in PIP_PACKAGES).
NO_DEPS_PACKAGES=(megatron-core==0.16.1)
# The unified Lightning package (lightning.pytorch), beside pytorch-lightning for the Lightning
# integration's test: it needs what pytorch-lightning needs (pinned in PIP_PACKAGES).
NO_DEPS_PACKAGES+=(lightning==2.6.6)
PIP_PACKAGES+=(packaging==26.3 PyYAML==6.0.3)

# The newest Megatron-core release, tested on Python 3.12 in its own virtual environment
# (.venv312, ctest entry python_megatron_latest). PyPI's torch for Python 3.12 is the CUDA build:
# without its nvidia-* wheels `import torch` fails (libcudnn.so.9), so they come along (~3.5 GB).
TTRACE_VENV312="${TTRACE_ROOT}/.venv312"
PY312_PACKAGES=(torch==2.13.0 h5py==3.16.0 numpy==2.4.6 pytest==9.2.0 pyzmq==27.1.0
  packaging==26.3 PyYAML==6.0.3)
PY312_NO_DEPS_PACKAGES=(megatron-core==0.19.2)
# torchtitan's own Llama 3 and parallelize code (ctest entry python_titan), here because its
# models import triton, which only the CUDA build of torch brings. Without its dependencies
# (datasets, wandb, tensorboard, ...): what its model, parallelize, loss, optimizer and
# distributed modules import is spmd_types and tyro (with tyro's docstring-parser and typeguard).
PY312_NO_DEPS_PACKAGES+=(torchtitan==0.3.0 spmd_types==0.2.3 tyro==1.0.17
  docstring-parser==0.18.0 typeguard==4.6.1)
# torchtitan's Trainer (ctest entry python_integration_titan) imports its data loader
# (torchdata), metrics (tensorboard), tokenizer (tokenizers) and Hugging Face text datasets
# (datasets, in the range torchtitan 0.3.0 asks for) when it is imported: with their
# dependencies.
PY312_PACKAGES+=(torchdata==0.11.0 tensorboard==2.21.0 tokenizers==0.23.3 datasets==4.7.0)

log() { printf '\033[1m[ttrace]\033[0m %s\n' "$*" >&2; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi
}

install_apt_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]})); then
    log "installing Debian packages: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

install_python_env() {
  if [[ ! -x "${TTRACE_PY}" ]]; then
    log "creating ${TTRACE_VENV}"
    python3 -m venv "${TTRACE_VENV}"
  fi
  # The stamp records what was installed; reinstall when the requirements or the package change.
  local stamp="${TTRACE_VENV}/.ttrace-installed"
  local want
  want="$(printf '%s\n' "${PIP_PACKAGES[@]}" "${NO_DEPS_PACKAGES[@]}" | sha1sum)$(sha1sum "${TTRACE_ROOT}/python/pyproject.toml" "${TTRACE_ROOT}/python/testing/pyproject.toml")"
  if [[ ! -f "${stamp}" || "$(cat "${stamp}")" != "${want}" ]]; then
    log "installing Python packages into .venv (torch==2.13.0 CPU, h5py, pytest, ruff, pyzmq, transformers, megatron-core, build)"
    "${TTRACE_PY}" -m pip install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
    "${TTRACE_PY}" -m pip install -q --disable-pip-version-check --no-deps "${NO_DEPS_PACKAGES[@]}"
    "${TTRACE_PY}" -m pip install -q --disable-pip-version-check --no-deps -e "${TTRACE_ROOT}/python"
    # The test-support package (fixtures, demo bundles, bug zoo): development only, never in
    # the wheel.
    "${TTRACE_PY}" -m pip install -q --disable-pip-version-check --no-deps -e "${TTRACE_ROOT}/python/testing"
    printf '%s' "${want}" >"${stamp}"
  fi
}

# A Python 3.12 interpreter: TTRACE_PYTHON312_BASE, else pyenv's newest 3.12, else python3.12.
find_python312() {
  local candidates=("${TTRACE_PYTHON312_BASE:-}")
  local root
  root="$(pyenv root 2>/dev/null || echo "${HOME}/.pyenv")"
  local found=()
  mapfile -t found < <(ls -d "${root}"/versions/3.12*/bin/python 2>/dev/null | sort -V -r)
  candidates+=("${found[@]}")
  candidates+=("$(command -v python3.12 || true)")
  local py
  for py in "${candidates[@]}"; do
    if [[ -n "${py}" && -x "${py}" ]] && "${py}" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))'; then
      echo "${py}"
      return 0
    fi
  done
  return 1
}

python312_stamp_current() {
  local want
  want="$(printf '%s\n' "${PY312_PACKAGES[@]}" "${PY312_NO_DEPS_PACKAGES[@]}" | sha1sum)$(sha1sum "${TTRACE_ROOT}/python/pyproject.toml" "${TTRACE_ROOT}/python/testing/pyproject.toml")"
  if [[ "${1:-}" == --print ]]; then
    printf '%s' "${want}"
    return 0
  fi
  local stamp="${TTRACE_VENV312}/.ttrace-installed"
  [[ -x "${TTRACE_VENV312}/bin/python" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]
}

# The third-party packages of .venv312 (the long download). Touches nothing in the source
# tree, so it may run beside the rest of the set-up; install_python312_project adds this project.
install_python312_packages() {
  local py312="${TTRACE_VENV312}/bin/python"
  if python312_stamp_current; then
    return 0
  fi
  if [[ ! -x "${py312}" ]]; then
    local base
    if ! base="$(find_python312)"; then
      log "no Python 3.12 found (set TTRACE_PYTHON312_BASE, or: pyenv install 3.12); the newest Megatron-core is tested with it"
      exit 1
    fi
    log "creating ${TTRACE_VENV312} with ${base}"
    "${base}" -m venv "${TTRACE_VENV312}"
  fi
  log "installing Python packages into .venv312 (torch==2.13.0 with its CUDA wheels, ${PY312_NO_DEPS_PACKAGES[*]})"
  "${py312}" -m pip install -q --disable-pip-version-check "${PY312_PACKAGES[@]}"
  "${py312}" -m pip install -q --disable-pip-version-check --no-deps "${PY312_NO_DEPS_PACKAGES[@]}"
}

# This project's packages, editable, after install_python312_packages (their builds write into
# the source tree: never beside the .venv's own editable installs).
install_python312_project() {
  if python312_stamp_current; then
    return 0
  fi
  local py312="${TTRACE_VENV312}/bin/python"
  "${py312}" -m pip install -q --disable-pip-version-check --no-deps -e "${TTRACE_ROOT}/python"
  "${py312}" -m pip install -q --disable-pip-version-check --no-deps -e "${TTRACE_ROOT}/python/testing"
  python312_stamp_current --print >"${TTRACE_VENV312}/.ttrace-installed"
}

build_project() {
  if [[ ! -f "${TTRACE_BUILD}/build.ninja" ]]; then
    log "configuring ${TTRACE_BUILD}"
    cmake -S "${TTRACE_ROOT}" -B "${TTRACE_BUILD}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTTRACE_PYTHON="${TTRACE_PY}" >/dev/null
  fi
  log "building"
  build_quietly "${TTRACE_BUILD}" --
}

# Builds with cmake and fails with the build's own status: the progress lines are filtered out,
# but a failed build must never pass because a filter (or an old binary) succeeded.
build_quietly() {
  local status=0
  cmake --build "$@" -j"$(nproc)" >"${TTRACE_ROOT}/.build.log" 2>&1 || status=$?
  grep -vE '^\[[0-9]+/[0-9]+\] ' "${TTRACE_ROOT}/.build.log" >&2 || true
  if ((status != 0)); then
    log "build failed (cmake --build ${*%--}: exit ${status}); the log is above"
    exit "${status}"
  fi
}

ttrace_setup() {
  install_apt_packages
  install_python_env
  build_project
}
