# Sourced by run.sh and test.sh: make .venv with the pinned dependencies, reinstalling when pyproject changes.
# Usage: ensure_venv [extras]
ensure_venv() {
  local extras="${1:-}" spec="." stamp
  [ -n "$extras" ] && spec=".[$extras]"
  local python="${PYTHON:-}"
  if [ -z "$python" ]; then
    for candidate in python3.12 python3.11 python3; do
      if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        python="$candidate"; break
      fi
    done
  fi
  if [ -z "$python" ]; then
    echo "Python 3.11 or newer is needed (python3.11 / python3.12 on PATH)." >&2; return 1
  fi
  if [ ! -x .venv/bin/python ]; then
    echo "==> creating .venv with $python"
    "$python" -m venv .venv
  fi
  stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)-${extras:-base}"
  if [ ! -f "$stamp" ]; then
    echo "==> installing dependencies ($spec)"
    # The stamp only after both succeed, also where the caller does not run under `set -e`.
    .venv/bin/python -m pip install --quiet --upgrade pip || return 1
    .venv/bin/python -m pip install --quiet -e "$spec" || return 1
    touch "$stamp"
  fi
  export PATH="$PWD/.venv/bin:$PATH"
}

# The gpulab SDK and CLI (sdk/), installed as users install it (`pip install ./sdk`, not editable: its tests then
# check the package as built), again whenever its pyproject or its code changes.
ensure_sdk() {
  local stamp
  stamp=".venv/.sdk-$(cat sdk/pyproject.toml sdk/README.md sdk/gpulab/*.py | sha256sum | cut -c1-16)"
  if [ ! -f "$stamp" ]; then
    echo "==> installing the gpulab SDK (pip install ./sdk)"
    rm -f .venv/.sdk-*
    .venv/bin/python -m pip install --quiet ./sdk || return 1
    touch "$stamp"
  fi
}
