#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or with sudo), builds the library and the showcase
# in examples/, and runs it. Quick when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ninja -C build examples/showcase >build/ninja.log 2>&1 || { tail -n 60 build/ninja.log; exit 1; }
exec build/examples/showcase
