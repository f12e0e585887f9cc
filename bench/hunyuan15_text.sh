#!/usr/bin/env bash
# HunyuanVideo-1.5's text encoding at the real widths against the peer in one run, on the same random weights:
# Qwen2.5-VL-7B's language model with LAYERS + 2 layers (the pipeline reads hidden_states[-3]: we run LAYERS of them,
# transformers all of them, as the real 26 of 28) and ByT5-small, float32 on the CPU, 2 threads each; a prompt of
# about 60 words with a quoted text, and a negative prompt. Ours: bench-hunyuan15-text (the run's real tokens, and
# the pipeline's 1108 for comparison); the peer: transformers 5.24 called as HunyuanVideo15Pipeline calls it
# (bench/hunyuan15_peer_text.py). The tokenizers come from the reference case hunyuan15_tiny (STUDIO_GOLDENS_DIR,
# default ../shared/goldens): a small vocabulary with Qwen's template, so a prompt takes more tokens than with
# Qwen's own, which makes our real-token figure an upper bound.
# The peer's Python: PEER_PYTHON, else BUILD_DIR/bench-venv-042 (bench/peer_042.sh).
# Usage: bench/hunyuan15_text.sh [BUILD_DIR] [LAYERS] [REPEATS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
layers=${2:-2}
repeats=${3:-3}
goldens=${STUDIO_GOLDENS_DIR:-$root/../shared/goldens}
[[ -d $goldens/hunyuan15_tiny/tokenizer ]] ||
  { echo "hunyuan15_text: no hunyuan15_tiny tokenizers in $goldens (set STUDIO_GOLDENS_DIR)" >&2; exit 2; }
# shellcheck source=bench/peer_042.sh
source "$root/bench/peer_042.sh"
python=$(peer_python "$build")
work=$(mktemp -d /tmp/dit-hy15-text-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/bin/bench-make-model" "$work/model" --family hunyuan15 --layers "$layers" --text_encoders --bfloat16 >/dev/null
cp -r "$goldens/hunyuan15_tiny/tokenizer" "$goldens/hunyuan15_tiny/tokenizer_2" "$work/model/"
chmod -R u+w "$work/model"
prompt='A weathered lighthouse keeper climbs the spiral stairs at dusk, carrying a brass lantern. Through the
salt-streaked window the sea turns from slate to amber as the beam begins to sweep. A wooden sign by the door reads
"KEEP THE LIGHT". Slow dolly in, warm practical light, film grain, shallow depth of field.'
negative='low quality, blurry, distorted hands, text artifacts, overexposed, static frame'
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
OMP_NUM_THREADS=2 "$build/bin/bench-hunyuan15-text" "$work/model" "$prompt" "$negative" "$repeats" | tee "$work/ours"
tokens=$(sed -n 's/^| the real tokens (a run) | \([0-9]*\), \([0-9]*\) |.*/\1 \2/p' "$work/ours")
[[ -n $tokens ]] || { echo "hunyuan15_text: no token counts in bench-hunyuan15-text's table" >&2; exit 1; }
glyph_bytes=24  # ByT5 reads `Text "KEEP THE LIGHT". ` (23 bytes) and </s>
echo
# shellcheck disable=SC2086
"$python" "$root/bench/hunyuan15_peer_text.py" "$work/model" $tokens "$glyph_bytes" "$repeats"
