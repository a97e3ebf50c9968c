#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root or with sudo), builds the library and the showcase
# in examples/, and runs it. Quick when everything is already in place.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/progress.sh
step "checking what is installed (scripts/setup.sh: apt-get for what is missing, then meson setup)"
scripts/setup.sh
step "building the library and the showcase (only what it needs)"
ninja_watched build/ninja.log examples/showcase || { tail -n 60 build/ninja.log; exit 1; }
step "running build/examples/showcase"
exec build/examples/showcase
