"""Notifications (accounts/notify/) and maintenance windows (labs/maintenance/)."""

from __future__ import annotations

from accounts.env import envbool, envint, envnetworks
from portal.settings.data import REDIS_URL

# Chat/webhook (apprise) URLs whose host is on loopback, a private, link-local or reserved range are refused (no
# SSRF), unless the address is inside one of these comma-separated addresses or networks (e.g. "10.20.0.0/16").
NOTIFY_ALLOW_PRIVATE_URLS = envnetworks("NOTIFY_ALLOW_PRIVATE_URLS")
# A burst (a sweep of jobs ending) within this many seconds is one message per person and channel.
NOTIFY_DIGEST_WINDOW_S = envint("NOTIFY_DIGEST_WINDOW_S", 30, minimum=0, maximum=3600)
# Tries after the first failure, each NOTIFY_RETRY_BASE_S * 2**n later; then the failure shows on the account page.
NOTIFY_RETRIES = envint("NOTIFY_RETRIES", 4, minimum=0, maximum=20)
NOTIFY_RETRY_BASE_S = envint("NOTIFY_RETRY_BASE_S", 30, minimum=1, maximum=3600)
# Without a broker (the embedded run, where tasks run in the process that sends them) a request never sends a
# notification itself: the periodic runner's sweep (accounts.tasks.notify_sweep, every minute) sends what is due.
NOTIFY_SEND_FROM_PERIODIC = envbool("NOTIFY_SEND_FROM_PERIODIC", default=not REDIS_URL)
# Connect and read timeout of one chat/webhook call (in the worker, never in a request).
NOTIFY_WEBHOOK_TIMEOUT_S = envint("NOTIFY_WEBHOOK_TIMEOUT_S", 5, minimum=1, maximum=60)
# "Send me a test message" per person in RATE_LIMIT_WINDOW_S (each one is an e-mail and a chat call; 0: no limit).
RATE_LIMIT_NOTIFY_TEST = envint("RATE_LIMIT_NOTIFY_TEST", 3, minimum=0)
# A job still queued this many times its estimated wait is "stuck" (job.stuck, once per attempt).
NOTIFY_STUCK_FACTOR = envint("NOTIFY_STUCK_FACTOR", 2, minimum=1, maximum=100)

# Maintenance: people with work or bookings on its nodes are told this many hours ahead; the banner shows on every
# page from MAINTENANCE_BANNER_LEAD_H hours before its start until its end.
MAINTENANCE_NOTIFY_LEAD_H = envint("MAINTENANCE_NOTIFY_LEAD_H", 24, minimum=0, maximum=24 * 30)
MAINTENANCE_BANNER_LEAD_H = envint("MAINTENANCE_BANNER_LEAD_H", 48, minimum=0, maximum=24 * 30)
