#!/usr/bin/env bash
# Installs onnxruntime (and numpy) from PyPI into build/onnxruntime-venv for the ONNX export tests
# (tests/test_onnx.cpp runs the exported models with it). Optional: where PyPI cannot be reached
# the tests that need it are reported as skipped. Prints the interpreter to use, or nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/onnxruntime-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import onnxruntime, numpy' 2>/dev/null; then
  { python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check onnxruntime numpy; } \
    >build/onnxruntime-venv.log 2>&1 || { echo "onnxruntime: not installed (build/onnxruntime-venv.log)" >&2; exit 0; }
fi
"$venv/bin/python" -c 'import onnxruntime, numpy' 2>/dev/null && echo "$PWD/$venv/bin/python"
exit 0
