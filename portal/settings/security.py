"""HTTPS, cookies, the Content-Security-Policy, and what /metrics asks for and reports (portal/ops.py)."""

from __future__ import annotations

from accounts.env import envbool, envint, envlist, envstr
from portal.settings.base import DEBUG

# --- Security --------------------------------------------------------------------------

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("BEHIND_TLS_PROXY", False) else None
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", default=not DEBUG)
# Probes and scrapers talk plain HTTP inside the cluster.
# ... and so does the hub, server to server, for its OAuth token and userinfo calls (PORTAL_INTERNAL_URL).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$", r"^o/(token|userinfo|revoke_token)/$"]
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", default=not DEBUG)
SESSION_COOKIE_SECURE = envbool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = envbool("CSRF_COOKIE_SECURE", default=not DEBUG)
SESSION_COOKIE_AGE = envint("SESSION_COOKIE_AGE", 60 * 60 * 12, minimum=300)
SESSION_ENGINE = "accounts.sessions"  # Django's database sessions, their lookup compiled once per process
X_FRAME_OPTIONS = "DENY"
SECURE_REFERRER_POLICY = "same-origin"

# Content-Security-Policy (django-csp): scripts only from the portal's own files, never inline (every page's
# behaviour lives in static/js/; confirmations are data-confirm attributes read by static/js/portal.js). Style
# attributes stay allowed (style-src-attr: the bars' and the timeline's computed widths), <style> and stylesheets
# only from 'self'. WebSockets (/ws/gpus/) are 'self'. The API docs pages add their CDN (portal/urls.py).
# CSP_REPORT_ONLY=true sends the same policy as Content-Security-Policy-Report-Only (to try a change first).
_CSP_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "script-src-attr": ["'none'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
CSP_REPORT_ONLY = envbool("CSP_REPORT_ONLY", False)
if CSP_REPORT_ONLY:
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP_POLICY
    CONTENT_SECURITY_POLICY = None
else:
    CONTENT_SECURITY_POLICY = _CSP_POLICY

# --- Operations (portal/ops.py) ----------------------------------------------------------
# Bearer token /metrics asks for; without it /metrics is open only in DEBUG (elsewhere 403, and check --deploy warns).
METRICS_TOKEN = envstr("METRICS_TOKEN", "")
# Celery queues whose lengths /metrics reports.
PORTAL_METRICS_QUEUES = envlist("PORTAL_METRICS_QUEUES", ["celery"])
