#!/usr/bin/env bash
# Serve the portal's ASGI app with uvicorn: the one command line of scripts/run.sh, the image (Dockerfile's CMD)
# and the tests that start the portal as run.sh does. HOST and PORT (127.0.0.1:8000); more arguments go to uvicorn.
#
# X-Forwarded-For and X-Forwarded-Proto are believed only from the proxies FORWARDED_ALLOW_IPS names (addresses or
# networks, comma-separated; the settings read the same variable: accounts/addresses.py). Empty, the default: from
# nobody. uvicorn's own default would believe whoever connects from 127.0.0.1, so any local client (or a proxy on
# this machine that passes the header through) could name any address and get a fresh throttle and lockout budget.
#
# permessage-deflate on the WebSockets (the live GPU grid) is off unless WS_PER_MESSAGE_DEFLATE=true. The server
# compresses once per client and message (nothing is shared between connections): with 1,000 watchers that was half
# the fan-out's CPU and its p50 went from 88 to 55 ms without it (README, "The fan-out benchmark"). An update is a
# few kilobytes a second per viewer uncompressed; a site short of bandwidth turns it on.
set -euo pipefail
cd "$(dirname "$0")/.."
export FORWARDED_ALLOW_IPS="${FORWARDED_ALLOW_IPS:-}"
proxy_headers=(--no-proxy-headers)
if [ -n "$FORWARDED_ALLOW_IPS" ]; then
  proxy_headers=(--proxy-headers --forwarded-allow-ips "$FORWARDED_ALLOW_IPS")
fi
deflate="${WS_PER_MESSAGE_DEFLATE:-false}"
case "$deflate" in
  true | false) ;;
  *) echo "WS_PER_MESSAGE_DEFLATE must be true or false, not '$deflate'." >&2; exit 2 ;;
esac
exec python -m uvicorn portal.asgi:application --host "${HOST:-127.0.0.1}" --port "${PORT:-8000}" \
  "${proxy_headers[@]}" --ws-per-message-deflate "$deflate" "$@"
