#!/usr/bin/env bash
# Run the whole test suite on PostgreSQL and Redis, installing what it needs first.
# Extra arguments go to pytest, e.g. scripts/test.sh tests/labs -x
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages the tests drive: Debian's Chromium (browser tests), docker-compose (compose file check),
# kubernetes-client (kubectl kustomize renders deploy/) and Node.js with npm (JupyterHub's proxy,
# configurable-http-proxy, for the notebook tests).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium chromium-driver)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
# bubblewrap: local jobs and notebooks run only in its sandbox (jobs/backends/sandbox.py).
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
# kubectl: its Kustomize renders deploy/ for tests/deploy.
command -v kubectl >/dev/null 2>&1 || missing+=(kubernetes-client)
# promtool (Debian's prometheus package): checks and unit-tests the alert rules of deploy/components/monitoring.
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# LDAP sign-in (the `ldap` extra, optional in the portal but tested): python-ldap builds against libldap2-dev and
# libsasl2-dev (no wheel on PyPI); the tests start a real slapd on loopback and load its directory with ldap-utils.
[ -e /usr/include/ldap.h ] || missing+=(libldap2-dev)
[ -e /usr/include/sasl/sasl.h ] || missing+=(libsasl2-dev)
command -v slapd >/dev/null 2>&1 || [ -x /usr/sbin/slapd ] || missing+=(slapd)
command -v ldapadd >/dev/null 2>&1 || missing+=(ldap-utils)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
# gettext: msgfmt compiles the translations (locale/*.po, into .mo files that are built, not committed) and
# xgettext extracts them for the catalogue's up-to-date test (tests/portal/test_translations.py).
command -v msgfmt >/dev/null 2>&1 || missing+=(gettext)
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

bash scripts/services.sh
. scripts/_venv.sh
ensure_venv dev,hub,ldap
ensure_sdk
# From package-lock.json: JupyterHub's proxy (the notebook tests run a real hub on loopback) and axe-core (the
# browser tests' accessibility sweep injects node_modules/axe-core/axe.min.js into every page).
if [ ! -x node_modules/.bin/configurable-http-proxy ] || [ ! -f node_modules/axe-core/axe.min.js ]; then
  echo "==> installing configurable-http-proxy and axe-core (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

echo "==> ruff"
ruff check .
ruff format --check --quiet . || { echo "ruff format would change files: run 'ruff format .'" >&2; exit 1; }
echo "==> compilemessages"
python manage.py compilemessages -v0 --ignore=.venv --ignore=node_modules
echo "==> pytest (PostgreSQL)"
python -m pytest "$@"
# The embedded path: the run command's SQLite (tests/settings_sqlite.py) under the reservation, job and notebook
# service tests, the overlapping-booking race included, and the budgets' alerts and block. Only for a whole run:
# with test paths given, the one above.
for arg in "$@"; do case "$arg" in -*) ;; *) [ -e "${arg%%::*}" ] && exit 0 ;; esac; done
echo "==> pytest (SQLite, the embedded path)"
exec python -m pytest --ds=tests.settings_sqlite "$@" \
  tests/labs/reservations/test_services.py tests/labs/reservations/test_api.py tests/labs/test_placement.py \
  tests/labs/test_course_term.py tests/jobs/test_services.py tests/jobs/test_usage_sql.py tests/jobs/test_runtime_history.py \
  tests/notebooks/test_notebooks.py \
  tests/labs/budgets/test_alerts.py tests/labs/budgets/test_block.py \
  tests/labs/usage/test_accounting.py tests/labs/usage/test_api.py tests/labs/usage/test_efficiency.py \
  tests/labs/usage/test_daysums.py tests/portal/test_prepared.py tests/portal/test_quotas_many.py
