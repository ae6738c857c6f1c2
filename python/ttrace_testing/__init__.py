"""Test support for TTrace Explorer: fixture and demo bundle writers, the bug zoo's specs and
runners, serving-job helpers. Shared by the tests (python/tests, tests/), the benchmarks
(bench/) and the CMake test fixtures.

It is installed in the development environment only (python/testing/pyproject.toml, from
scripts/setup.sh) and never ships in the `ttrace` wheel: the product holds no test code."""
