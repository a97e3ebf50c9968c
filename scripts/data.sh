#!/usr/bin/env bash
# Installs the real datasets the examples and benchmarks train on, when missing (through
# scripts/setup.sh): dataset-fashion-mnist puts Fashion-MNIST (IDX, gzip) under
# /usr/share/datasets/fashion-mnist. Unit tests never need it: they write their own small files.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/setup.sh dataset-fashion-mnist
