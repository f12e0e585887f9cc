#!/usr/bin/env bash
# The Debian package as a user meets it, in a clean Debian 12 root made for the test (debootstrap from
# Debian's registry): `apt install ./dit-studio_*.deb` pulls in everything it needs, dit-launch makes the
# README's demo clip with the installed demo model (its frames equal the build tree's), the studio starts
# offscreen, and purging removes every file of the package and keeps the user's history and settings.
# Also lintian, with each tag it still reports explained in docs/packaging.md.
# Usage: debian_package.sh PACKAGE_BUILD_DIR (a -DSTUDIO_TORCH=system build after `--target package`);
# needs root (debootstrap, chroot). $DEBIAN_MIRROR overrides http://deb.debian.org/debian.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
fail() { echo "FAIL: $*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "the install test makes a Debian root with debootstrap and chroot: run it as root"
debs=("$build"/dit-studio_*.deb)
deb=${debs[0]}
[[ -f $deb ]] || fail "no package in $build: cmake --build $build --target package"
tmp=$(mktemp -d)
root=$tmp/root
cleanup() {
  for m in dev/pts dev sys proc; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT

# lintian: every tag it reports is one docs/packaging.md explains.
lintian --no-tag-display-limit "$deb" > "$tmp/lintian.txt" 2>&1 || true
while read -r tag; do
  grep -q "\`$tag\`" "$src/docs/packaging.md" || fail "lintian reports $tag, which docs/packaging.md does not explain: $(grep " $tag" "$tmp/lintian.txt")"
done < <(awk '/^[EWIP]: /{print $3}' "$tmp/lintian.txt" | sort -u)
echo "lintian: $(grep -c '^[EW]: ' "$tmp/lintian.txt" || true) errors and warnings, each explained in docs/packaging.md"

echo "making a clean Debian 12 root (debootstrap, minbase) ..."
debootstrap --variant=minbase bookworm "$root" "$mirror" > "$tmp/debootstrap.log" 2>&1 ||
  { tail -20 "$tmp/debootstrap.log"; fail "debootstrap"; }
mount -t proc proc "$root/proc"
mount --bind /sys "$root/sys"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/artist LANG=C.UTF-8 "$@"; }
# The build tree's runs get the same empty environment: a variable such as OPENBLAS_CORETYPE picks other
# BLAS kernels, whose sums round differently, and the PNGs are compared bit for bit.
in_build() { (cd "$tmp" && env -i PATH=/usr/bin:/bin HOME="$tmp" LANG=C.UTF-8 "$build/bin/dit-launch" "$@" 2>/dev/null); }
cp "$deb" "$root/tmp/"
in_root apt-get update -qq
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" \
  > "$tmp/apt.log" 2>&1 || { tail -30 "$tmp/apt.log"; fail "apt install ./$(basename "$deb")"; }
in_root dpkg -L dit-studio > "$tmp/files.txt"

# LibTorch multiplies through OpenBLAS, not the reference BLAS (about 30x slower).
blas=$(in_root update-alternatives --query libblas.so.3-x86_64-linux-gnu | awk '/^Value:/{print $2}')
[[ $blas == *openblas* ]] || fail "libblas.so.3 is '$blas' in the installed system, not OpenBLAS"

# The README's first run, on the installed demo model, to an MP4 of the expected shape whose frames match
# the build tree's run (the encoder libraries may differ in version: within 40 dB); then a short run to
# lossless PNGs, whose pixels must be the build tree's exactly.
mkdir -p "$root/home/artist"
args=(--prompt "A paper boat drifts on a pond" --output demo.mp4)
in_root sh -c 'cd /home/artist && dit-launch "$@"' sh "${args[@]}" 2> "$tmp/launch.err" ||
  { tail -5 "$tmp/launch.err"; fail "dit-launch in the installed system"; }
grep -q "/usr/share/dit-studio/demo-model" "$tmp/launch.err" || fail "dit-launch did not use the installed demo model"
clip=$root/home/artist/demo.mp4
shape=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=width,height,nb_read_frames -of csv=p=0 "$clip")
[[ $shape == "288,192,25" ]] || fail "the installed run's clip is width,height,frames $shape, expected 288,192,25"
in_build "${args[@]}"
psnr=$(ffmpeg -v info -i "$clip" -i "$tmp/demo.mp4" -lavfi psnr -f null - 2>&1 | sed -nE 's/.*PSNR.* average:([0-9.inf]+).*/\1/p')
[[ $psnr == inf ]] || awk -v p="$psnr" 'BEGIN{exit !(p >= 40)}' || fail "the installed run's frames differ from the build tree's (PSNR $psnr dB)"
short=(--prompt "A lighthouse at dusk" --num_inference_steps 4 --num_frames 9 --height 96 --width 144 --output frames/)
in_root sh -c 'cd /home/artist && dit-launch "$@"' sh "${short[@]}" 2> "$tmp/launch.err" ||
  { tail -5 "$tmp/launch.err"; fail "dit-launch to PNGs in the installed system"; }
in_build "${short[@]}"
pixels() { ffmpeg -v error -i "$1/frame_%05d.png" -f framemd5 - | grep -v '^#'; }
[[ $(pixels "$root/home/artist/frames") == "$(pixels "$tmp/frames")" && -n $(pixels "$tmp/frames") ]] ||
  fail "the installed run's PNG frames differ from the build tree's"
echo "dit-launch: demo.mp4, 25 frames of 288 x 192, PSNR against the build tree's run: $psnr; PNG frames identical"

# The studio, offscreen: it starts, asks the installed worker for the devices, and shows its window.
in_root env QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=/tmp dit-studio --screenshot /home/artist/studio.png \
  2> "$tmp/studio.err" || { cat "$tmp/studio.err"; fail "dit-studio in the installed system"; }
size=$(od -An -tu1 -j16 -N8 "$root/home/artist/studio.png" | awk '{print $3*256+$4 "x" $7*256+$8}')
[[ $size == 1280x860 ]] || fail "the studio's window is $size, expected 1280x860"
history="$root/home/artist/.local/share/DiT Studio/dit-studio/history.sqlite"
[[ -f $history ]] || fail "the studio made no history at $history"
settings="$root/home/artist/.config/DiT Studio/dit-studio.conf"
mkdir -p "$(dirname "$settings")"
printf '[worker]\nchosen=/usr/bin/dit-worker\n' > "$settings"
echo "dit-studio: up offscreen, window 1280 x 860, history at ~/.local/share/DiT Studio/dit-studio"
in_root dit-models list > "$tmp/models.out" 2>&1 || { cat "$tmp/models.out"; fail "dit-models list in the installed system"; }
echo "dit-models: runs in the installed system ($(head -1 "$tmp/models.out"))"

# Purge: nothing of the package is left; the user's files are.
in_root env DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq dit-studio > "$tmp/purge.log" 2>&1 ||
  { cat "$tmp/purge.log"; fail "apt purge dit-studio"; }
left=()
while read -r f; do [[ -f $root$f || -L $root$f ]] && left+=("$f"); done < "$tmp/files.txt"
((${#left[@]} == 0)) || fail "purged, but these files are left: ${left[*]}"
stray=$(find "$root/usr" "$root/etc" "$root/var/lib/dpkg/info" \( -iname '*dit-studio*' -o -iname '*ditstudio*' \
        -o -name 'dit-launch*' -o -name 'dit-worker*' -o -name 'dit-models*' \) 2>/dev/null || true)
[[ -z $stray ]] || fail "purged, but these are left: $stray"
[[ -f $history && -f $settings ]] || fail "purging removed the user's history or settings"
echo "purge: all $(wc -l < "$tmp/files.txt") paths of the package gone; the user's history and settings kept"
