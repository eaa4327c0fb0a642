#!/usr/bin/env bash
# Run the portal on its embedded defaults: SQLite, in-memory channel layer, tasks in-process,
# local backends, and a demo lab of 40 RTX 4090 nodes with demo users. Serves http://127.0.0.1:8000
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_venv.sh
# No `ldap` extra: the embedded run has no LDAP sign-in, so python-ldap (and the C build it needs) is not wanted.
ensure_venv hub
# Local jobs and notebooks run only in a bubblewrap sandbox (never as the portal): Debian's bubblewrap.
if ! command -v bwrap >/dev/null 2>&1; then
  echo "==> installing bubblewrap"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends bubblewrap
fi
# The translations (locale/*.po) compile with Debian's gettext (msgfmt): the .mo files are built, not committed.
if ! command -v msgfmt >/dev/null 2>&1; then
  echo "==> installing gettext"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends gettext
fi
# Notebooks: JupyterHub's proxy (configurable-http-proxy) from npm, with Debian's Node.js if there is none.
if [ ! -x node_modules/.bin/configurable-http-proxy ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "==> installing nodejs npm"
    sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  echo "==> installing configurable-http-proxy (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# The embedded setup: no outside services, whatever the shell has exported.
unset DATABASE_URL REDIS_URL
export DEBUG="${DEBUG:-true}" INVENTORY_BACKEND=local
# The demo lab is the one the portal was first described for, a Brazilian university: São Paulo's clock, reais.
export LAB_TIME_ZONE="${LAB_TIME_ZONE:-America/Sao_Paulo}" LAB_CURRENCY="${LAB_CURRENCY:-BRL}"
# No Celery worker here: the periodic runner moves the notebook queue, so let it look often.
export NOTEBOOKS_TICK_S="${NOTEBOOKS_TICK_S:-2}"
mkdir -p var
python manage.py compilemessages -v0 --ignore=.venv --ignore=node_modules
python manage.py migrate --no-input -v0
python manage.py seed_demo
# The in-process worker: periodic tasks (reservation tick, ...) through the same code as Celery beat.
python manage.py run_periodic &
periodic=$!
# Notebooks: the hub's OAuth client at the portal, then JupyterHub with real JupyterLab servers on this machine.
if python manage.py help hub_oauth_client >/dev/null 2>&1; then
  python manage.py hub_oauth_client
fi
python manage.py run_hub --spawner local --portal-url "http://127.0.0.1:${PORT:-8000}" &
hub=$!
trap 'kill "$periodic" "$hub" 2>/dev/null || true' EXIT INT TERM
echo "==> notebooks served by JupyterHub on ${NOTEBOOKS_HUB_PUBLIC_URL:-http://127.0.0.1:8001}/"
echo "==> GPU Lab Portal on http://${HOST:-127.0.0.1}:${PORT:-8000}/  (Ctrl-C stops it)"
# uvicorn, believing X-Forwarded-For only from the proxies FORWARDED_ALLOW_IPS names (none by default).
scripts/serve.sh
