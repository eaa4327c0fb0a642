"""Test settings: the real settings module, pointed at PostgreSQL and Redis on loopback.

The tests need the real services (exclusion constraints, Channels and Celery on Redis);
override DATABASE_URL / REDIS_URL to point elsewhere.
"""

import hashlib
import os

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/portal")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ.setdefault("DEBUG", "true")
os.environ.setdefault("TOKEN_THROTTLE_RATE", "1000/min")
os.environ.setdefault("LOGIN_THROTTLE_RATE", "1000/min")

from portal.settings import *  # noqa: E402,F403

# Tasks run in-process through the same code path; the worker test starts a real worker.
CELERY_TASK_ALWAYS_EAGER = True
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]

# One test database per checkout, so two clones on one machine (a developer's and CI's) never collide;
# PORTAL_TEST_DB names another one, for two suites running at once from one checkout.
DATABASES["default"]["TEST"] = {  # noqa: F405
    "NAME": os.environ.get("PORTAL_TEST_DB") or f"test_portal_{hashlib.sha1(str(BASE_DIR).encode()).hexdigest()[:8]}"  # noqa: F405
}
