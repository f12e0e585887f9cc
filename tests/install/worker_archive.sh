#!/usr/bin/env bash
# The self-contained worker archive (packaging/pack-worker.sh) works wherever it is unpacked: in a fresh
# folder, with an empty environment (no LD_LIBRARY_PATH), it runs the reference cases on the CPU through
# dit-launch to the goldens' tolerance, and every library its ranks load comes from the archive but
# glibc's. Usage: worker_archive.sh BUILD_DIR (after `cmake --build BUILD_DIR --target worker_archive`)
set -euo pipefail
build=$(cd "$1" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
archives=("$build"/dit-worker-*.tar.gz)
[[ -f ${archives[0]} ]] || fail "no worker archive in $build: cmake --build $build --target worker_archive"
tar -C "$tmp" -xzf "${archives[0]}"
root=$(echo "$tmp"/dit-worker-*/)
root=${root%/}
worker=$root/bin/dit-worker
[[ -x $worker ]] || fail "the archive holds no bin/dit-worker"

clean_env=(env -i PATH=/usr/bin:/bin HOME="$tmp" CUDA_VISIBLE_DEVICES= STUDIO_GOLDENS_DIR="${STUDIO_GOLDENS_DIR:-}")
"${clean_env[@]}" "$worker" --version | grep -q '^dit-worker .*(LibTorch ' || fail "dit-worker --version from the archive"

# The reference cases, with the archive's worker first on the search path; the loader logs each
# process's libraries to a file of its own.
mkdir "$tmp/ld"
"${clean_env[@]}" DIT_STUDIO_WORKER_PATH="$root" LD_DEBUG=libs LD_DEBUG_OUTPUT="$tmp/ld/ld" \
  "$build/tests/test_dit_launch" --gtest_filter='Cases/ReproducesReference.*:DitLaunch.words_to_video_reproduce_reference' \
  > "$tmp/test.log" 2>&1 || { tail -40 "$tmp/test.log"; fail "the reference cases through the archive's worker"; }
grep -E "max error|from words" "$tmp/test.log"

ranks=0
for log in "$tmp"/ld/ld.*; do
  grep -q "initialize program: .*/bin/dit-worker$" "$log" || continue
  grep -q "initialize program: $worker$" "$log" || fail "a rank ran another worker: $(grep 'initialize program' "$log")"
  ranks=$((ranks + 1))
  # glibc (the loader, libc, libm, ...) is the system's; all else must be the archive's.
  outside=$(grep -oE "calling init: .*" "$log" | sed 's/calling init: //' | grep -v "^$root/" |
            grep -vE '/(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1)$' || true)
  [[ -z $outside ]] || fail "a rank loaded libraries from outside the archive: $outside"
done
((ranks >= 4)) || fail "expected the archive's worker to run the 4 cases, saw $ranks ranks"
echo "worker archive: $ranks ranks ran from $(basename "$root") with only glibc from the system"
