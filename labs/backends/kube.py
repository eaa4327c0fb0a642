"""The one place that talks to the Kubernetes API server.

Every caller gets its ApiClient here and turns client errors into BackendError with
`kubernetes_error`, so retries and tests have one place to look.
"""

from __future__ import annotations

import urllib3
from django.conf import settings
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from accounts.errors import BackendError


def api_client() -> client.ApiClient:
    configuration = client.Configuration()
    if settings.KUBERNETES_API_URL:
        configuration.host = settings.KUBERNETES_API_URL.rstrip("/")
        if settings.KUBERNETES_TOKEN:
            configuration.api_key = {"BearerToken": settings.KUBERNETES_TOKEN}
            configuration.api_key_prefix = {"BearerToken": "Bearer"}
        configuration.verify_ssl = settings.KUBERNETES_VERIFY_TLS
    elif settings.KUBERNETES_IN_CLUSTER:
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(client_configuration=configuration)
    configuration.retries = False
    return client.ApiClient(configuration)


def request_timeout() -> tuple[float, float]:
    return (float(settings.KUBERNETES_TIMEOUT_S), float(settings.KUBERNETES_TIMEOUT_S))


def kubernetes_error(exc: Exception, action: str) -> BackendError:
    """Say what failed and whether trying again later may help."""
    if isinstance(exc, ApiException):
        status = exc.status or 0
        retryable = status == 0 or status == 429 or status >= 500
        reason = exc.reason or "error"
        return BackendError(f"Kubernetes refused to {action}: {status} {reason}", retryable=retryable, status=status)
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError, TimeoutError)):
        return BackendError(f"Kubernetes could not be reached to {action}: {exc}", retryable=True)
    return BackendError(f"Kubernetes failed to {action}: {exc}", retryable=False)
