#!/usr/bin/env bash
# Run the portal on its embedded defaults: SQLite, in-memory channel layer, tasks in-process,
# local backends, and a demo lab of 40 RTX 4090 nodes with demo users. Serves http://127.0.0.1:8000
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_venv.sh
ensure_venv

# The embedded setup: no outside services, whatever the shell has exported.
unset DATABASE_URL REDIS_URL
export DEBUG="${DEBUG:-true}" INVENTORY_BACKEND=local
mkdir -p var
python manage.py migrate --no-input -v0
python manage.py seed_demo
# The in-process worker: periodic tasks (reservation tick, ...) through the same code as Celery beat.
python manage.py run_periodic &
periodic=$!
trap 'kill "$periodic" 2>/dev/null || true' EXIT INT TERM
echo "==> GPU Lab Portal on http://${HOST:-127.0.0.1}:${PORT:-8000}/  (Ctrl-C stops it)"
python -m uvicorn portal.asgi:application --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}"
