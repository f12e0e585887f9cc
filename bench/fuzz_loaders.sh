#!/usr/bin/env bash
# The loaders' fuzz targets (fuzz-loaders and fuzz-t5-tokenizer) for longer than CTest's fixed runs (about 20 s each), with a new seed each time: executions, coverage (edges) and corpus size
# per target, and any crash it finds (kept as crash-* in the current folder; add it to tests/fuzz_seeds/).
# Usage: bench/fuzz_loaders.sh [BUILD_DIR] [SECONDS_PER_TARGET]
set -euo pipefail
build=${1:-build}
seconds=${2:-300}
fuzzer="$build/tests/fuzz-loaders"
[ -x "$fuzzer" ] || { echo "no $fuzzer: build the fuzz_loaders target (needs clang)" >&2; exit 2; }
seeds="$build/tests/fuzz-seeds"
src=$(cd "$(dirname "$0")/.." && pwd)
echo "fuzz-loaders, $seconds s per target, $(nproc) cores, $(date -u +%F)"
echo
echo "| target | executions | exec/s | coverage (edges) | features | corpus | crashes |"
echo "|---|---|---|---|---|---|---|"
for target in safetensors configs job clip t5; do
  corpus=$(mktemp -d /tmp/fuzz-$target-XXXXXX)
  case $target in
    job) extra="$src/tests/fuzz_seeds/job" ;;
    configs) extra="$seeds/configs $src/tests/fuzz_seeds/configs" ;;
    clip) extra="$seeds/clip $src/tests/fuzz_seeds/clip" ;;
    t5) extra="$seeds/t5" ;;
    *) extra="$seeds/$target" ;;
  esac
  set +e
  program=$fuzzer
  [ $target = t5 ] && program="$build/tests/fuzz-t5-tokenizer"  # apart: no sanitizers (see the source)
  log=$(FUZZ_TARGET=$target "$program" "$corpus" $extra -max_total_time="$seconds" -max_len=524288 -rss_limit_mb=2048 \
          -timeout=10 -print_final_stats=1 2>&1)
  code=$?
  set -e
  last=$(grep -E '^#[0-9]+[[:space:]]+(DONE|REDUCE|NEW|pulse)' <<<"$log" | tail -1 || true)
  runs=$(grep -oE 'stat::number_of_executed_units:[[:space:]]*[0-9]+' <<<"$log" | grep -oE '[0-9]+$' || echo "?")
  rate=$(grep -oE 'stat::average_exec_per_sec:[[:space:]]*[0-9]+' <<<"$log" | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  files=$(find "$corpus" -type f | wc -l)
  crashes=$([ $code -eq 0 ] && echo 0 || grep -oE "(crash|leak|timeout|oom)-[0-9a-f]+" <<<"$log" | sort -u | tr '\n' ' ')
  echo "| $target | $runs | $rate | $cov | $ft | $files | ${crashes:-0} |"
  rm -rf "$corpus"
done
