# Sourced by scripts/setup.sh, showcase.sh and test.sh: what a person watching a long step sees.
# Every step says what it is doing, and nothing runs more than about 20 s without a line of output
# (issue 34: a set-up a user can watch).

# "== 12:03:04 building the library and the tests"
step() { echo "== $(date +%H:%M:%S) $*"; }

# watched WHAT LOG PATTERN COMMAND...: runs COMMAND with its output in LOG; every 15 s prints how
# long it has run and the last line of LOG matching PATTERN (an extended regex: ninja's "[k/N] ..."
# lines, doctest's per-test-case durations), preceded by "k/WATCH_TOTAL" -- k the lines matching so
# far -- when WATCH_TOTAL is set; returns COMMAND's status.
watched() {
  local what=$1 log=$2 pattern=$3
  shift 3
  "$@" >"$log" 2>&1 &
  local pid=$! start=$SECONDS rc=0
  while kill -0 "$pid" 2>/dev/null; do
    local i
    for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 1
    done
    kill -0 "$pid" 2>/dev/null || break
    local last
    last=$(grep -E "$pattern" "$log" 2>/dev/null | tail -n 1 | sed -E 's/^[0-9.]+ s: //' | cut -c1-100)
    if [ -n "${WATCH_TOTAL:-}" ]; then
      last="$(grep -cE "$pattern" "$log" 2>/dev/null || true)/$WATCH_TOTAL done, the last: ${last}"
    fi
    echo "   $what, $((SECONDS - start)) s: ${last:-(running)}"
  done
  wait "$pid" || rc=$?
  return "$rc"
}

# ninja_watched LOG TARGET...: a ninja build of build/ with its progress ("[k/N] what") every 15 s.
ninja_watched() {
  local log=$1
  shift
  local todo
  todo=$(ninja -C build -n "$@" 2>/dev/null | grep -cE '^\[[0-9]+/[0-9]+\]' || true)
  if [ "${todo:-0}" -eq 0 ]; then
    echo "   nothing to build: everything is current"
    return 0
  fi
  echo "   build steps: $todo (ninja, $(nproc) cores; the log: $log)"
  watched "building" "$log" '^\[[0-9]+/[0-9]+\]' ninja -C build "$@"
}
