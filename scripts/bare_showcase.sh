#!/usr/bin/env bash
# The README's showcase command on a bare Debian 12, timed: a minimal Debian (debootstrap
# --variant=minbase bookworm) in a chroot under DIR, a clone of this repository's HEAD in it, and
# scripts/showcase.sh run there from nothing -- apt, meson setup, the build, the run. What issue 34's
# "fresh 2-core machine" target is measured with (docs/architecture.md, "How long a fresh build
# takes"). Needs root and Debian's mirror; leaves DIR for a second run (remove DIR/root/src/fluxion/build
# to time the build alone again). The machine should be otherwise idle: the build is CPU-bound.
#
#   scripts/bare_showcase.sh DIR       (default /tmp/fluxion-bare)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-/tmp/fluxion-bare}
root=$dir/root
command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap >/dev/null
if [ ! -x "$root/bin/bash" ]; then
  echo "== debootstrap bookworm (minbase) into $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$dir.debootstrap.log" 2>&1
  cp /etc/resolv.conf "$root/etc/"
fi
rm -rf "$root/src/fluxion"
git clone -q "$PWD" "$root/src/fluxion"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --rbind /dev "$root/dev"
mountpoint -q "$root/sys" || mount -t sysfs sys "$root/sys"
echo "== scripts/showcase.sh in the chroot ($(git log --oneline -1 | cut -c1-60))"
start=$(date +%s)
chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root bash -c 'cd /src/fluxion && scripts/showcase.sh' >"$dir.showcase.log" 2>&1 ||
  { tail -n 30 "$dir.showcase.log"; echo "bare_showcase: the showcase failed (log: $dir.showcase.log)"; exit 1; }
grep '^== [0-9]' "$dir.showcase.log"
echo "bare_showcase: $(( $(date +%s) - start )) s in all (log: $dir.showcase.log; the build's steps: $root/src/fluxion/build/.ninja_log)"
