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
hogs=${HOG:-$(nproc --all)}
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
  echo "$?" > "$logs/round-$r.rc"
  echo "round $r: ctest exited $(cat "$logs/round-$r.rc") after $((SECONDS - start)) s" \
       "($(grep -Eo '[0-9]+% tests passed, [0-9]+ tests failed' "$logs/round-$r.log" || echo 'no summary'))"
done
stop_hogs

# The suites CTest lists after "The following tests FAILED:" ("  12 - test_workers (Timeout)", whatever the
# status), the cases inside them from GoogleTest's "[  FAILED  ] Suite.case" and Qt Test's
# "FAIL!  : Class::case()" lines, each once per round; a round whose ctest failed with nothing listed
# (no tests matched, a crash of ctest itself) counts as a failure of its own.
failures=$(for ((r = 1; r <= rounds; r++)); do
  f="$logs/round-$r.log"
  { sed -n '/^The following tests FAILED:/,/^Errors while running CTest/p' "$f" |
      sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \(.*\)$/suite \1/p'
    grep -E '^\[  FAILED  \] [A-Za-z_0-9/.]+(, where .*)?$' "$f" | sed -E 's/^\[  FAILED  \] ([^ ,]+).*/case  \1/'
    grep -Eo '^FAIL!  : [^ ]+' "$f" | sed -E 's/^FAIL!  : /case  /'; } | sort -u > "$logs/round-$r.failed"
  if [[ $(cat "$logs/round-$r.rc") != 0 && ! -s "$logs/round-$r.failed" ]]; then
    echo "ctest   exited $(cat "$logs/round-$r.rc") with no failure listed (see round-$r.log)"
  fi
  cat "$logs/round-$r.failed"
done | sort | uniq -c | sort -rn)
if [[ -z "$failures" ]]; then
  echo "flaky: no test failed in $rounds round(s)"
  exit 0
fi
echo "flaky: failures (rounds failed, of $rounds; logs in $logs):"
echo "$failures"
exit 1
