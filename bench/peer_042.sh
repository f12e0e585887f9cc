# The peer's Python for the benches against diffusers 0.42.1 (and transformers 5.24), sourced by them:
# peer_python BUILD_DIR prints PEER_PYTHON when set (it must import both), else BUILD_DIR/bench-venv-042's python,
# making that venv on first use from the project's torch wheels (.deps/wheels-2.15.0).
peer_python() {
  local build=$1 root python
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  python=${PEER_PYTHON:-$build/bench-venv-042/bin/python}
  local check='import diffusers, transformers
assert diffusers.__version__ == "0.42.1" and transformers.__version__ == "5.24.0"'
  if ! "$python" -c "$check" 2>/dev/null; then
    [[ -z ${PEER_PYTHON:-} ]] ||
      { echo "PEER_PYTHON=$python lacks diffusers 0.42.1 or transformers 5.24.0" >&2; return 2; }
    echo "making $build/bench-venv-042" >&2
    # Called as $(peer_python ...), where set -e does not hold: each step returns on failure.
    python3 -m venv "$build/bench-venv-042" >&2 || return 1
    "$build/bench-venv-042/bin/pip" install -q --no-index --no-deps "$root"/.deps/wheels-2.15.0/*.whl >&2 || return 1
    "$build/bench-venv-042/bin/pip" install -q --find-links "$root/.deps/wheels-2.15.0" torch==2.15.0 \
      diffusers==0.42.1 transformers==5.24.0 >&2 || return 1
    "$python" -c "$check" || { echo "$build/bench-venv-042 was made but does not import both" >&2; return 1; }
  fi
  echo "$python"
}
