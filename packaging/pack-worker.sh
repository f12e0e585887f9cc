#!/usr/bin/env bash
# Packs a self-contained dit-worker (a LibTorch 2.x build with CUDA and NCCL) as a .tar.gz that runs
# wherever it is unpacked: the worker, our tokenizer module, and every library they load, LibTorch's and
# CUDA's included, found through $ORIGIN-relative run paths. Nothing is taken from the system but glibc
# and, on a GPU machine, the NVIDIA driver (libcuda, which LibTorch loads when it finds a GPU).
# Usage: packaging/pack-worker.sh WORKER MODULE OUT_DIR
#   WORKER: the built dit-worker; MODULE: the built libstudio_sentencepiece.so; writes
#   OUT_DIR/dit-worker-<version>-<torch and CUDA>-linux-<arch>.tar.gz and prints its path.
set -euo pipefail
worker=$1 module=$2 out_dir=$3
command -v patchelf >/dev/null || { echo "pack-worker: patchelf is missing (packaging/install-deps.sh installs it)" >&2; exit 2; }

# dit-worker 0.2.0 (LibTorch 2.15.0, CUDA 13.2, NCCL 2.30.7) -> dit-worker-0.2.0-libtorch2.15.0-cuda13.2
version_line=$("$worker" --version)
name=$(sed -E 's/^dit-worker ([^ ]+) \(LibTorch ([^,)]+)(, CUDA ([^,)]+))?.*/dit-worker-\1-libtorch\2-cuda\4/; s/-cuda$/-cpu/' \
       <<<"$version_line")-linux-$(uname -m)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/$name
mkdir -p "$root/bin" "$root/lib/dit-studio"
cp "$worker" "$root/bin/dit-worker"
cp "$module" "$root/lib/dit-studio/"

# glibc's own libraries stay the system's (they must match its loader); everything else is packed.
is_glibc() { [[ $(basename "$1") =~ ^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl)\.so ]]; }
libs_of() { ldd "$1" | awk '/=> \//{print $3}'; }
declare -A packed=()
pack_lib() {
  local real; real=$(readlink -f "$1")
  is_glibc "$1" && return 0
  [[ -n ${packed[$(basename "$1")]:-} ]] && return 0
  packed[$(basename "$1")]=1
  cp "$real" "$root/lib/$(basename "$1")"
}
while read -r lib; do pack_lib "$lib"; done < <(libs_of "$worker"; libs_of "$module")
# Loaded with dlopen, so invisible to ldd: cuDNN's engines, NVRTC's builtins, and LibTorch's lazily
# loaded linear algebra and NVRTC stubs. Each is taken from beside a library already packed.
for lib in $(libs_of "$worker"); do
  dir=$(dirname "$(readlink -f "$lib")")
  case $(basename "$lib") in
    libcudnn.so.*) for f in "$dir"/libcudnn*.so.*; do pack_lib "$f"; done ;;
    libnvrtc.so.*) for f in "$dir"/libnvrtc-builtins.so.*; do pack_lib "$f"; done ;;
    libtorch_cuda.so) for f in "$dir"/libtorch_cuda_linalg.so "$dir"/libcaffe2_nvrtc.so; do
                        [[ -e $f ]] && pack_lib "$f"; done ;;
  esac
done

# Run paths relative to each file: the worker looks in ../lib, the libraries beside themselves, the
# tokenizer module (loaded from lib/dit-studio) one folder up.
patchelf --set-rpath '$ORIGIN/../lib' "$root/bin/dit-worker"
patchelf --set-rpath '$ORIGIN/..' "$root/lib/dit-studio/libstudio_sentencepiece.so"
for f in "$root"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
cat > "$root/README" <<README
$version_line

A self-contained DiT Studio worker: unpack it anywhere and point dit-launch (--worker $name) or the
studio (Settings > Worker) at this folder, or add it to DIT_STUDIO_WORKER_PATH. It needs glibc and, for
GPUs, the NVIDIA driver; every other library it loads is in lib/.
README

mkdir -p "$out_dir"
archive=$out_dir/$name.tar.gz
gzip=gzip; command -v pigz >/dev/null && gzip=pigz
tar -C "$stage" -cf - "$name" | $gzip -1 > "$archive.part"
mv "$archive.part" "$archive"
echo "$archive"
