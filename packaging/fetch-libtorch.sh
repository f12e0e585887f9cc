#!/usr/bin/env bash
# LibTorch 2.x for the default build: the C++ half of PyPI's torch wheel (headers, libraries, CMake files)
# and the CUDA libraries it names as dependencies, unpacked side by side into .deps/libtorch-VERSION the
# way site-packages lays them out, so the libraries' own RPATHs ($ORIGIN/../../nvidia/...) find each
# other. Only pip's download is used: nothing is installed into any Python, and nothing of Python is
# needed at run time. The wheel's CUDA build runs on machines without a GPU. CMake finds the folder with
# no flag (cmake/StudioTorch.cmake). The wheel's pure-Python requirements are unpacked beside it too, so
# that the tests can run the real torchrun (`python3 -m torch.distributed.run` with PYTHONPATH set to the
# folder); the product never uses them. Idempotent; run by packaging/install-deps.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$root/packaging/torch-version")
prefix="$root/.deps/libtorch-$version"
[[ -f "$prefix/.complete" && -f "$prefix/.python-side" ]] && exit 0

wheels="$root/.deps/wheels-$version"
mkdir -p "$wheels"
echo "install-deps: fetching PyPI's torch $version wheel and its CUDA libraries into $wheels (about 3 GB)"
pip() { python3 -m pip download --quiet --disable-pip-version-check --only-binary=:all: -d "$wheels" "$@"; }
pip --no-deps "torch==$version"
# torchrun's Python side for the tests: the wheel's requirements without a platform marker (and theirs).
mapfile -t python_reqs < <(python3 - "$wheels" "$version" <<'EOF'
import glob, sys, zipfile
wheel = glob.glob(f"{sys.argv[1]}/torch-{sys.argv[2]}-*.whl")[0]
meta = zipfile.ZipFile(wheel).read(f"torch-{sys.argv[2]}.dist-info/METADATA").decode()
for line in meta.splitlines():
    if line.startswith("Requires-Dist:") and ";" not in line:
        print(line.split(":", 1)[1].strip())
EOF
)
((${#python_reqs[@]})) && pip "${python_reqs[@]}"
if [[ -f "$prefix/.complete" ]]; then  # an older unpack: add the Python side only
  for w in "$wheels"/*.whl; do
    case $(basename "$w") in torch-*|nvidia*|cuda*) ;; *) python3 -m zipfile -e "$w" "$prefix" ;; esac
  done
  touch "$prefix/.python-side"
  exit 0
fi
# The wheel's Linux requirements, less the Python-only ones (triton, cuda-bindings): the CUDA libraries.
mapfile -t cuda_reqs < <(python3 - "$wheels" "$version" <<'EOF'
import glob, sys, zipfile
wheel = glob.glob(f"{sys.argv[1]}/torch-{sys.argv[2]}-*.whl")[0]
meta = zipfile.ZipFile(wheel).read(f"torch-{sys.argv[2]}.dist-info/METADATA").decode()
for line in meta.splitlines():
    if not line.startswith("Requires-Dist:") or "Linux" not in line:
        continue
    req = line.split(":", 1)[1].split(";")[0].strip()
    if not req.startswith(("triton", "cuda-bindings")):
        print(req)
EOF
)
((${#cuda_reqs[@]})) && pip "${cuda_reqs[@]}"

rm -rf "$prefix.partial"
mkdir -p "$prefix.partial"
for w in "$wheels"/*.whl; do
  python3 -m zipfile -e "$w" "$prefix.partial"
done
rm -rf "$prefix"
mv "$prefix.partial" "$prefix"
touch "$prefix/.complete" "$prefix/.python-side"
echo "install-deps: LibTorch $version in $prefix"
