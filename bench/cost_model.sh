#!/usr/bin/env bash
# The cost model (docs/cost-model.md) against measurements: every valid configuration of the mid-size
# CogVideoX-2B shape (real widths: 30 heads x 64, width 1920, 226 text tokens; LAYERS blocks, 240 x 352 x 13
# frames: 1,320 video + 226 text tokens, guidance 6: a CFG batch of 2, float32) on 1, 2, 3 and 4 CPU
# processes (or GPUs, one process each, when dit-worker sees them). For each process count `dit-launch
# --plan --json` predicts (calibrating first, in a fresh cache), then each configuration runs STEPS steps;
# measured: the mean over the steps after the first of the slowest rank's step time (the first carries
# one-time work: on a GPU, loading kernels and making the cuBLAS handles took 0.3 s, more than 50 steady
# steps of this job), against the model's prediction for those same steps (PipeFusion's warm-up steps and
# pipelined ones apart), averaged over ROUNDS sweeps (default 2;
# the sweeps interleave, so that a moment of other load on the machine spreads over configurations
# rather than landing on one). Prints a markdown table of predicted
# against measured, and per process count and over all, the Spearman rank correlation and whether the
# predicted best is the measured best or within 10% of it.
# The dtype is dit-launch's default: float32 on CPUs, bfloat16 on GPUs. HEIGHT, WIDTH and FRAMES change the
# size (e.g. CogVideoX-2B's own 480 x 720 x 49 on GPUs).
# Usage: bench/cost_model.sh [BUILD_DIR] [LAYERS] [STEPS] [PROCESS COUNTS...]
set -euo pipefail
build=${1:-build}
layers=${2:-4}
steps=${3:-3}
shift $(( $# > 3 ? 3 : $# ))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 3 4)
size=(--height "${HEIGHT:-240}" --width "${WIDTH:-352}" --num_frames "${FRAMES:-13}")
work=$(mktemp -d /tmp/dit-cost-model-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/bin/bench-make-model" "$work/model" --layers "$layers" "${size[@]}" >/dev/null
export XDG_CACHE_HOME="$work/cache"
job=(--model "$work/model" --prompt_embeds "$work/model/embeds.safetensors" "${size[@]}" --num_inference_steps "$steps")

rounds=${ROUNDS:-2}
echo "CogVideoX-2B widths, $layers layers, ${size[3]}x${size[1]}x${size[5]} (width x height x frames), $steps steps," \
     "guidance 6 (CFG batch of 2), $(nproc) cores," \
     "$rounds rounds; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| processes | configuration | predicted s/step | measured s/step | predicted / measured |"
echo "|---|---|---|---|---|"
: >"$work/all.tsv"
# Every prediction first: the calibrations of each process count close together in time.
for n in "${counts[@]}"; do
  "$build/bin/dit-launch" "${job[@]}" --plan --json --nproc_per_node "$n" >"$work/plan-$n.json"
done
# The mean over the steps after the first (all of them when there is one) of the slowest rank's step time of
# one run of `flags`, or "failed".
measure() {
  if "$build/bin/dit-launch" "${job[@]}" $1 --events_log "$work/events" >"$work/log" 2>&1; then
    grep '"kind":"progress"' "$work/events" |
      awk 'match($0, /"step":[0-9]+/) { s = substr($0, RSTART + 7, RLENGTH - 7);
             match($0, /"seconds":[0-9.e+-]+/); t = substr($0, RSTART + 10, RLENGTH - 10) + 0;
             if (t > m[s]) m[s] = t }
           END { for (s in m) if (s > 1 || length(m) == 1) { sum += m[s]; k++ } printf "%.4f", sum / k }'
  else
    echo failed
    tail -3 "$work/log" >&2
  fi
}
# Every configuration of every count, one line each: count, flags, predicted seconds per step over the
# steps `measure` averages (PipeFusion's first --warmup_steps steps are synchronous, the rest pipelined: the
# plan's two kinds of step, weighted by how many of each those steps hold). The plan's keys come sorted.
for n in "${counts[@]}"; do
  sed -nE 's/^ *"(args|pipelined_step_seconds|warmup_step_seconds)": "?([^",]*)"?,?$/\2/p' "$work/plan-$n.json" |
    paste -d '|' - - - |
    awk -F'|' -v n="$n" -v steps="$steps" '{
      w = match($1, /--warmup_steps [0-9]+/) ? substr($1, RSTART + 15, RLENGTH - 15) + 0 : 0
      if (w > steps) w = steps
      if (steps == 1) predicted = w >= 1 ? $3 : $2
      else { sync = w > 1 ? w - 1 : 0; predicted = (sync * $3 + (steps - 1 - sync) * $2) / (steps - 1) }
      printf "%s|%s|%.6f\n", n, $1, predicted }'
done >"$work/configs"
for round in $(seq "$rounds"); do
  i=0
  while IFS='|' read -r n flags predicted; do
    i=$((i + 1))
    echo "$(measure "$flags")" >>"$work/measured-$i"
  done <"$work/configs"
done
i=0
: >"$work/all.tsv"
while IFS='|' read -r n flags predicted; do
  i=$((i + 1))
  measured=$(awk '$1 == "failed" { bad = 1 } { s += $1 } END { if (bad) print "failed"; else printf "%.4f", s / NR }' "$work/measured-$i")
  printf "| %s | %s | %.4f | %s | %s |\n" "$n" "${flags:-one process}" "$predicted" "$measured" \
    "$(awk -v p="$predicted" -v m="$measured" 'BEGIN { if (m + 0 > 0) printf "%.2f", p / m }')"
  [ "$measured" = failed ] || printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$n" "${flags:-one process}" "$predicted" "$measured" \
    "$(sed -n 1p "$work/measured-$i")" "$(sed -n 2p "$work/measured-$i")" >>"$work/all.tsv"
done <"$work/configs"
for n in "${counts[@]}"; do awk -F'\t' -v n="$n" '$1 == n' "$work/all.tsv" >"$work/count-$n.tsv"; done

# Spearman's rho (ties take their mean rank) and the predicted best against the measured best; with two
# rounds or more, also the rho of the first two rounds' measurements against each other: how far this
# machine's noise lets any model's order agree with a measured one (configurations that differ by less than
# the noise swap places between rounds).
verdict() {
  awk -F'\t' -v label="$1" '
    function ranks(col, r,   i, j, k, t, v) {
      for (i = 1; i <= n; i++) { v = x[i, col]; k = 0; j = 0
        for (t = 1; t <= n; t++) { if (x[t, col] < v) k++; else if (x[t, col] == v) j++ }
        r[i] = k + (j + 1) / 2 }
    }
    function rho(c1, c2,   a, b, i, ma, mb, sab, saa, sbb) {
      ranks(c1, a); ranks(c2, b)
      for (i = 1; i <= n; i++) { ma += a[i] / n; mb += b[i] / n }
      for (i = 1; i <= n; i++) { sab += (a[i] - ma) * (b[i] - mb); saa += (a[i] - ma) ^ 2; sbb += (b[i] - mb) ^ 2 }
      return (saa > 0 && sbb > 0) ? sab / sqrt(saa * sbb) : 0
    }
    { n++; name[n] = $1 " " $2; x[n, 1] = $3 + 0; x[n, 2] = $4 + 0; x[n, 3] = $5 + 0; x[n, 4] = $6 + 0; two = $6 != "" }
    END {
      if (n < 2) { printf "- %s: %d configuration(s), nothing to rank\n", label, n; exit }
      r = rho(1, 2)
      pb = 1; mbest = 1
      for (i = 2; i <= n; i++) { if (x[i, 1] < x[pb, 1]) pb = i; if (x[i, 2] < x[mbest, 2]) mbest = i }
      gap = x[pb, 2] / x[mbest, 2] - 1
      printf "- %s: %d configurations, Spearman %.2f%s; predicted best `%s` measures %.3f s/step, the measured best `%s` %.3f s/step (%+.1f%%): %s\n",
             label, n, r, two ? sprintf(" (round 1 against round 2: %.2f)", rho(3, 4)) : "", name[pb], x[pb, 2],
             name[mbest], x[mbest, 2], 100 * gap,
             (gap <= 0.10 && r >= 0.8) ? "goal met" : (gap <= 0.10 ? "best within 10%, Spearman below 0.8" : "best not within 10%")
    }' "$2"
}
echo
for n in "${counts[@]}"; do verdict "$n processes" "$work/count-$n.tsv"; done
verdict "all process counts" "$work/all.tsv"
echo "- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
# What each calibration measured, one line per process count.
for f in "$work"/cache/dit-studio/calibration-*.json; do
  echo "- calibration: $(grep -E '"(ranks|gemm_flops_per_s|attention_flops_per_s|memory_bytes_per_s|op_seconds|link_bytes_per_s)"' "$f" |
    tr -d ' ,' | tr '\n' ' ')"
done
