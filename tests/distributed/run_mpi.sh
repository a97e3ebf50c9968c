#!/usr/bin/env bash
# run_mpi.sh NP PROGRAM [ARGS...]: runs PROGRAM under `mpirun -np NP --oversubscribe` over
# loopback; exits 77 (meson's "skipped") when Open MPI's launcher is not installed. As root,
# Open MPI wants an explicit permission.
#   run_mpi.sh --expect-hang NP PROGRAM: the "hang" mode; passes when process 0 reports a
#   DeviceError within the timeout (the job then ends with a non-zero status on purpose).
set -uo pipefail
expect_hang=0
if [ "${1:-}" = "--expect-hang" ]; then expect_hang=1; shift; fi
np=$1; shift
command -v mpirun >/dev/null || { echo "mpirun not installed: skipped"; exit 77; }
args=(--oversubscribe -np "$np" --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
if [ $expect_hang -eq 0 ]; then
  exec timeout 300 mpirun "${args[@]}" "$@"
fi
out=$(FLUXION_COLLECTIVE_TIMEOUT=3 timeout 120 mpirun "${args[@]}" "$@" hang 2>&1)
echo "$out"
grep -q "process 0 raised DeviceError after [0-9.]* s: DeviceError: pmap over 'i'" <<<"$out"
