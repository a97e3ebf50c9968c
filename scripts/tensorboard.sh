#!/usr/bin/env bash
# Installs the `tensorboard` package from PyPI into build/tensorboard-venv for the TensorBoard test
# (tests/test_summary.cpp reads fx::summary's event files with TensorBoard's own event reader).
# Optional: where PyPI cannot be reached that test is reported as skipped. Prints the interpreter
# to use, or nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/tensorboard-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import tensorboard' 2>/dev/null; then
  echo "tensorboard: installing it from PyPI into $venv (for one test; about 180 MB)" >&2
  { python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check tensorboard; } \
    >build/tensorboard-venv.log 2>&1 || { echo "tensorboard: not installed (build/tensorboard-venv.log)" >&2; exit 0; }
fi
"$venv/bin/python" -c 'import tensorboard' 2>/dev/null && echo "$PWD/$venv/bin/python"
exit 0
