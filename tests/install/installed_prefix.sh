#!/usr/bin/env bash
# An installation into a fresh prefix works from there alone: `cmake --install` puts every file where
# GNUInstallDirs says, the programs find their worker, tokenizer module and demo model relative to
# themselves, each prints the version, the man pages carry every option --help lists, and the desktop
# entry and AppStream metainfo pass their validators. Usage: installed_prefix.sh BUILD_DIR VERSION
set -euo pipefail
build=$1 version=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null

for f in bin/dit-launch bin/dit-worker lib/dit-studio/libstudio_sentencepiece.so \
         share/dit-studio/demo-model/model_index.json share/dit-studio/demo-flux/model_index.json \
         share/icons/hicolor/scalable/apps/io.github.ditstudio.DiTStudio.svg \
         share/icons/hicolor/48x48/apps/io.github.ditstudio.DiTStudio.png \
         share/icons/hicolor/256x256/apps/io.github.ditstudio.DiTStudio.png \
         share/man/man1/dit-launch.1.gz share/man/man1/dit-worker.1.gz share/doc/dit-studio/copyright; do
  [[ -e $prefix/$f ]] || fail "$f is not installed"
done
studio=0
[[ -x $prefix/bin/dit-studio ]] && studio=1
programs=(dit-launch dit-worker)
((studio)) && programs+=(dit-studio)

for p in "${programs[@]}"; do
  "$prefix/bin/$p" --version | grep -q "^$p $version" || fail "$p --version does not print '$p $version'"
  # Every option of --help is in the man page (help2man makes it from --help: this catches a stale page).
  page=$(zcat "$prefix/share/man/man1/$p.1.gz" | sed 's/\\-/-/g; s/\\f[BRIP]//g')
  for opt in $("$prefix/bin/$p" --help | grep -oE -- '--[a-z_-]+' | sort -u); do
    grep -qF -- "$opt" <<<"$page" || fail "$p's man page lacks $opt"
  done
done

if ((studio)); then
  desktop-file-validate "$prefix/share/applications/io.github.ditstudio.DiTStudio.desktop"
  appstreamcli validate --no-net "$prefix/share/metainfo/io.github.ditstudio.DiTStudio.metainfo.xml"
  # Up with no display: it lists the devices through the installed worker and shows its build.
  HOME=$tmp/home QT_QPA_PLATFORM=offscreen "$prefix/bin/dit-studio" --screenshot "$tmp/studio.png" 2>"$tmp/studio.err" ||
    fail "dit-studio --screenshot: $(cat "$tmp/studio.err")"
  [[ $(head -c 8 "$tmp/studio.png" | od -An -tx1 | tr -d ' ') == 89504e470d0a1a0a ]] || fail "the screenshot is not a PNG"
fi

# Nothing installed points back into the build tree.
build_real=$(cd "$build" && pwd -P)
if leaks=$(grep -rlF "$build_real/" "$prefix"); then fail "these installed files name the build folder: $leaks"; fi
# A short run of the demo model from the prefix.
"$prefix/bin/dit-launch" --prompt "A paper boat" --num_inference_steps 2 --num_frames 9 --height 96 --width 144 \
  --output "$tmp/clip.mp4" 2>"$tmp/launch.err" || fail "dit-launch from the prefix: $(tail -3 "$tmp/launch.err")"
grep -q "$prefix/share/dit-studio/demo-model" "$tmp/launch.err" || fail "the demo model was not the prefix's"
frames=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames,width,height \
         -of csv=p=0 "$tmp/clip.mp4")
[[ $frames == "144,96,9" ]] || fail "the clip has width,height,frames $frames, expected 144,96,9"
echo "installed prefix: every file in place, programs, man pages, desktop files and a demo run all work"
