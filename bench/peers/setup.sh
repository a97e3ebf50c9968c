#!/usr/bin/env bash
# Installs the peers of the peer table -- JAX (CPU) and, unless --no-torch, PyTorch -- from PyPI into
# bench/peers/.venv (git-ignored). Optional: the build, the tests and CI never need it; run.sh uses it.
#
# PyTorch: PyPI has no CPU-only torch wheel for Linux x86-64. Its wheel links the CUDA runtime
# libraries (even libtorch_cpu.so needs libcudart and libcupti), so `import torch` fails without
# the nvidia-* / cuda-toolkit wheels, and they are installed (~3 GB, never used: no GPU is touched).
# Only triton (a GPU kernel compiler, ~1 GB, imported lazily) is left out. With --no-torch the
# table has no PyTorch columns.
set -euo pipefail
cd "$(dirname "$0")"

JAX_VERSION=0.10.2
TORCH_VERSION=2.15.0
with_torch=1
[ "${1:-}" = "--no-torch" ] && with_torch=0

[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
"$py" -m pip install -q "jax[cpu]==$JAX_VERSION" numpy

if [ "$with_torch" = 1 ]; then
  "$py" -m pip install -q --no-deps "torch==$TORCH_VERSION"
  # torch's own requirements (with their markers), less triton and the optional extras.
  reqs=$(mktemp)
  "$py" - >"$reqs" <<'PY'
import importlib.metadata as md
for r in md.requires("torch") or []:
    if "extra ==" not in r and not r.startswith("triton"):
        print(r)
PY
  # (pip then reports the missing triton as a dependency conflict: expected, and not an error)
  "$py" -m pip install -q -r "$reqs"
  rm -f "$reqs"
fi

"$py" -c "import jax; print('jax', jax.__version__, jax.devices())"
[ "$with_torch" = 0 ] || "$py" -c "import torch; print('torch', torch.__version__, '(CPU; cuda available:', torch.cuda.is_available(), ')')"
