#!/usr/bin/env bash
# Run the tests under shifted clocks and on a loaded machine: nothing may depend on the hour, the day or the speed.
#   scripts/clock-drills.sh [DRILL...] [-- PYTEST ARGS]     e.g. scripts/clock-drills.sh dst-autumn -- tests/notebooks
# Drills (the clock starts there and runs on; times in the lab's zone, Europe/Berlin):
#   sunday-2330   Sunday 29 Nov 2026 23:30 (into Monday: the day and the GPU-hours week roll over during the run)
#   monday-0000   Monday 30 Nov 2026 00:00
#   dst-autumn    Sunday 25 Oct 2026 02:55 CEST (03:00 CEST becomes 02:00 CET five minutes in)
#   dst-spring    Sunday 29 Mar 2026 01:55 CET (02:00 CET becomes 03:00 CEST five minutes in)
#   cpu-hog       the real clock, with one process spinning on a core for the whole run
# Without drill names it runs them all. Needs Debian's faketime (libfaketime; installed when missing); PostgreSQL and Redis keep their own
# clocks, so the tests must not compare the database's now() with Python's.
# Under libfaketime a timed wait (threading.Event.wait(timeout), Lock.acquire(timeout)) never returns: glibc's
# sem_clockwait is not faked. Test threads that loop use time.sleep, which is.
set -uo pipefail
cd "$(dirname "$0")/.."
drills=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do drills+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#drills[@]} -eq 0 ] && drills=(sunday-2330 monday-0000 dst-autumn dst-spring cpu-hog)
lib=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -1)
if [ -z "$lib" ]; then
  echo "==> installing faketime (libfaketime)"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends faketime
  lib=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -1)
  [ -n "$lib" ] || { echo "libfaketime is missing and could not be installed: apt-get install -y faketime" >&2; exit 2; }
fi
python=${PYTHON:-.venv/bin/python}
declare -A start=(
  [sunday-2330]="2026-11-29 22:30:00" [monday-0000]="2026-11-29 23:00:00"
  [dst-autumn]="2026-10-25 00:55:00" [dst-spring]="2026-03-29 00:55:00"
)  # in UTC
failed=()
for drill in "${drills[@]}"; do
  echo "==> $drill"
  if [ "$drill" = cpu-hog ]; then
    "$python" -c 'while True: pass' & hog=$!
    "$python" -m pytest -p no:cacheprovider "$@" || failed+=("$drill")
    kill "$hog"
  elif [ -n "${start[$drill]:-}" ]; then
    # One offset from the real clock for every process (pytest, the hub, Chromium, the servers): their clocks agree,
    # as on synced machines; "@time" would start each process's clock anew when it starts. Monotonic clocks are
    # shifted too (Python's sleep needs that).
    offset=$(( $(date -u -d "${start[$drill]}" +%s) - $(date -u +%s) ))
    TZ=UTC LD_PRELOAD="$lib" FAKETIME="$(printf '%+d' "$offset")" \
      "$python" -m pytest -p no:cacheprovider "$@" || failed+=("$drill")
  else
    echo "unknown drill $drill" >&2; exit 2
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "failed under: ${failed[*]}" >&2; exit 1; }
