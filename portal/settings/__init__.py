"""Settings for GPU Lab Portal, read from the environment: a package of small modules by concern, composed here in
order (a module reads the few values it needs of the modules above it by name).

With no environment at all they give the embedded setup (SQLite, in-memory channel layer, tasks run in-process,
local backends) so that a fresh clone runs. DATABASE_URL, REDIS_URL and the *_BACKEND settings switch to
PostgreSQL, Redis and the cluster.

A value that cannot be read stops the start at once (the typed helpers of accounts/env.py raise
ImproperlyConfigured). Values that are wrong only together (DEBUG off without SECRET_KEY, DATABASE_POOL without
PostgreSQL, ...) are Django system checks of the app they belong to (portal/checks.py, accounts/checks.py,
labs/*/checks.py, jobs/checks.py): manage.py commands run them, and portal/asgi.py, wsgi.py and celery.py refuse
to start on any error (portal.checks.refuse_to_start_misconfigured). The settings import no app code.

    base        the project: files, DEBUG, SECRET_KEY, hosts, apps, middleware, templates, the lab's name, static
                files, logging
    locale      the lab's locale: languages, time zone, currency, date and number formats
    data        the database (and its pool), Redis: cache and channel layer
    people      users, passwords, sign-in hardening (throttles, lockout), API tokens, rosters, rate limits
    signin      the university's sign-in: OpenID Connect, LDAP (optional), groups to roles and courses, backends
    api         Django REST framework and the OpenAPI schema
    lab         nodes (inventory, Kubernetes), reservations, the reconciler, a lab that is one machine
    jobs        training jobs
    notebooks   notebooks through JupyterHub, and the portal as the hub's OAuth / OpenID Connect provider
    usage       usage and efficiency, budgets and the weekly report
    telemetry   live GPU telemetry
    mail        e-mail
    notify      notifications (channels, digests, retries) and maintenance windows
    cluster     the lab's cluster: the NetworkPolicy self-check, GPU sharing and storage tiers for jobs, the fast
                network of multi-node training, the kiosk seat
    security    HTTPS, cookies, the Content-Security-Policy, /metrics
    workers     Celery, and the beat schedule built from the intervals above

(oidc_key.py is the helper that reads the ID tokens' signing key, not a settings module.)
"""

# ruff: noqa: I001  (the modules in the order above, not alphabetical)

from portal.settings.base import *  # noqa: F403
from portal.settings.locale import *  # noqa: F403
from portal.settings.data import *  # noqa: F403
from portal.settings.people import *  # noqa: F403
from portal.settings.signin import *  # noqa: F403
from portal.settings.api import *  # noqa: F403
from portal.settings.lab import *  # noqa: F403
from portal.settings.jobs import *  # noqa: F403
from portal.settings.notebooks import *  # noqa: F403
from portal.settings.usage import *  # noqa: F403
from portal.settings.telemetry import *  # noqa: F403
from portal.settings.mail import *  # noqa: F403
from portal.settings.notify import *  # noqa: F403
from portal.settings.cluster import *  # noqa: F403
from portal.settings.security import *  # noqa: F403
from portal.settings.workers import *  # noqa: F403

# `from portal.settings import *` (tests/settings.py) takes the settings and nothing else.
__all__ = [name for name in dir() if name.isupper()]
