"""The API: Django REST framework (authentication, parsers, errors, throttles) and its OpenAPI schema."""

from __future__ import annotations

from portal.settings.people import LOGIN_THROTTLE_RATE, TOKEN_THROTTLE_RATE

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate header makes anonymous API calls a 401, not a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.api.auth.ExpiringTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's JSON parser, refusing deep nesting, NUL characters and lone surrogates with a 400 parse_error.
    "DEFAULT_PARSER_CLASSES": ["portal.api.parsers.SafeJSONParser"],
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "EXCEPTION_HANDLER": "portal.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    "COERCE_DECIMAL_TO_STRING": False,
    "DEFAULT_THROTTLE_RATES": {"token": TOKEN_THROTTLE_RATE, "login": LOGIN_THROTTLE_RATE},
    # DRF's own throttles (AnonRateThrottle, ...) key on REMOTE_ADDR, never on the header; ours read client_ip.
    "NUM_PROXIES": 0,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU Lab Portal API",
    "DESCRIPTION": "The v1 contract of GPU Lab Portal: people, nodes, reservations, jobs, notebooks, usage.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Swagger UI and Redoc from our own static files (drf-spectacular-sidecar), never a CDN: the docs work offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The contract's error answers and the links between operations (portal/api/schema.py).
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "portal.api.schema.document_errors_and_links",
    ],
    "ENUM_NAME_OVERRIDES": {
        "NodeStatusEnum": "labs.models.NodeStatus",
        "ReservationStatusEnum": "labs.models.ReservationStatus",
        "CourseRoleEnum": "accounts.models.CourseRole",  # a roster's student or teaching assistant
        "CoursePartEnum": ["student", "assistant", "teacher"],  # /me/'s part in each course
    },
}
