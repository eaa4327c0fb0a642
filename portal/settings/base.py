"""The Django project itself: where files are, DEBUG and the secret key, hosts, apps, middleware, templates, the lab's
name, static files and logging (its locale: locale.py)."""

from __future__ import annotations

from pathlib import Path

from accounts.env import envbool, envlist, envstr

# The checkout (or /app in the image): portal/settings/base.py is three levels below it.
BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(envstr("PORTAL_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = envbool("DEBUG", default=True)

# Outside DEBUG there is no default: empty, and the start check portal.E001 stops every process (portal/checks.py).
SECRET_KEY = envstr("SECRET_KEY") or ("insecure-development-key-do-not-use-in-production" if DEBUG else "")

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "portal.web.admin_site.LabAdminConfig",  # django.contrib.admin, its system internals grouped apart
    "django.contrib.auth",
    "axes",  # sign-in lockout: AccessAttempt rows (admin console → Axes) per (username, address)
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # the API docs' Swagger UI and Redoc as static files
    "accounts",
    "portal.web",
    "portal.oauth",  # before the toolkit: its authorization page is the portal's
    "oauth2_provider",
    "labs",
    "jobs",
    "bench",  # the benchmarks (management commands only), apart from the product
]

MIDDLEWARE = [
    "portal.web.middleware.MalformedInputMiddleware",  # first: NUL characters never reach anything else
    "portal.web.middleware.RequestIdMiddleware",  # the request id audit entries carry (accounts.audit)
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",  # Content-Security-Policy on every answer (CONTENT_SECURITY_POLICY: security.py)
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the browser's language (Accept-Language)...
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "portal.web.language.PersonLanguageMiddleware",  # ...until the person chooses one (accounts.User.language)
    "django.contrib.messages.middleware.MessageMiddleware",
    "axes.middleware.AxesMiddleware",  # a locked-out sign-in gets portal.web.lockout.lockout_response (429)
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "portal.urls"
CSRF_FAILURE_VIEW = "portal.web.errors.csrf_failure"  # JSON under /api/, the 403 page elsewhere
WSGI_APPLICATION = "portal.wsgi.application"
ASGI_APPLICATION = "portal.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.web.context.portal",
            ],
        },
    },
]

# --- The lab ---------------------------------------------------------------------------

# Its language, time zone, currency and formats: locale.py.
LAB_NAME = envstr("LAB_NAME", "GPU Lab")

# --- Static files ----------------------------------------------------------------------

STATIC_URL = "static/"
STATIC_ROOT = Path(envstr("STATIC_ROOT", str(VAR_DIR / "static")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = DEBUG

# --- Logging ---------------------------------------------------------------------------

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
