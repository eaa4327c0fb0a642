"""E-mail (budget alerts, weekly summaries, roster invitations): the console (printed by the process) in the embedded
run; SMTP when EMAIL_HOST is set."""

from __future__ import annotations

from accounts.env import envbool, envint, envstr
from portal.settings.base import LAB_NAME

EMAIL_HOST = envstr("EMAIL_HOST", "")
EMAIL_BACKEND = envstr(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = envint("EMAIL_PORT", 587 if EMAIL_HOST else 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = envstr("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = envstr("EMAIL_HOST_PASSWORD", "")
# STARTTLS or TLS, not both (portal.E006).
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", default=bool(EMAIL_HOST))
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT_S", 10, minimum=1, maximum=300)
DEFAULT_FROM_EMAIL = envstr("DEFAULT_FROM_EMAIL", f"{LAB_NAME} <gpu-lab@localhost>")
