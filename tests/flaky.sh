#!/usr/bin/env bash
# Finds flaky tests before they land: runs the suites ROUNDS times with a CPU hog beside them (one busy
# loop per core, as a machine that also builds or runs another job), and lists every GoogleTest case and
# every CTest suite that failed in any round, with how often. Not part of CI (it takes ROUNDS times the
# suites' time); run it before resolving an issue that touches the workers, the launcher or the studio.
# Usage: tests/flaky.sh BUILD_DIR [ROUNDS (default 3)] [CTEST_REGEX (default: every suite)]
#   HOG=0 runs without the hog; HOG=N with N busy loops (default: one per core).
# Exit status: 0 when nothing failed, 1 when something did; each round's log stays in BUILD_DIR/flaky/.
set -uo pipefail
build=${1:?usage: tests/flaky.sh BUILD_DIR [ROUNDS] [CTEST_REGEX]}
rounds=${2:-3}
regex=${3:-.}
hogs=${HOG:-$(nproc)}
[[ -f "$build/CTestTestfile.cmake" ]] || { echo "flaky: $build has no tests (configure and build it first)" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "flaky: ROUNDS is '$rounds': expected a count such as 3" >&2; exit 2; }
logs="$build/flaky"
rm -rf "$logs" && mkdir -p "$logs"

hog_pids=()
stop_hogs() { ((${#hog_pids[@]})) && kill "${hog_pids[@]}" 2>/dev/null; wait 2>/dev/null; hog_pids=(); }
trap stop_hogs EXIT
for ((i = 0; i < hogs; i++)); do
  (while :; do :; done) &
  hog_pids+=($!)
done
echo "flaky: $rounds round(s) of ctest -R '$regex' in $build, with $hogs busy loop(s) beside them"

for ((r = 1; r <= rounds; r++)); do
  start=$SECONDS
  ctest --test-dir "$build" --output-on-failure --no-tests=error -R "$regex" > "$logs/round-$r.log" 2>&1
  rc=$?
  echo "round $r: ctest exited $rc after $((SECONDS - start)) s ($(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed' "$logs/round-$r.log"))"
done
stop_hogs

# A suite that failed is named by CTest ("  12 - test_workers (Failed)"); the cases inside it by
# GoogleTest's "[  FAILED  ] Suite.case" lines and Qt Test's "FAIL!  : Class::case()" (each once per round).
failures=$(for ((r = 1; r <= rounds; r++)); do
  f="$logs/round-$r.log"
  { grep -E '^[[:space:]]*[0-9]+ - .+ \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Not Run)[^)]*\)' "$f" |
      sed -E 's/^[[:space:]]*[0-9]+ - (.+)$/suite \1/'
    grep -E '^\[  FAILED  \] [A-Za-z_0-9/.]+(, where .*)?$' "$f" | grep -v ' listed below' |
      sed -E 's/^\[  FAILED  \] ([^ ,]+).*/case  \1/'
    grep -Eo '^FAIL!  : [^ ]+' "$f" | sed -E 's/^FAIL!  : /case  /'; } | sort -u
done | sort | uniq -c | sort -rn)
if [[ -z "$failures" ]]; then
  echo "flaky: no test failed in $rounds round(s)"
  exit 0
fi
echo "flaky: failures (rounds failed, of $rounds; logs in $logs):"
echo "$failures"
exit 1
