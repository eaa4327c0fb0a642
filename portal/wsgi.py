"""WSGI entry point. WSGI servers run no system checks: the app refuses to load on a check error."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()

from portal.checks import refuse_to_start_misconfigured  # noqa: E402  (needs Django set up first)

refuse_to_start_misconfigured()
