"""gpulab: the GPU Lab Portal from Python and from a terminal (`gpulab --help`).

import gpulab
lab = gpulab.Client()          # GPULAB_URL / GPULAB_TOKEN, or the file `gpulab login` wrote
job = lab.jobs.submit(image="python:3.12-slim", command=["python", "-c", "print('hi')"], gpus=1,
                      max_runtime_s=600)
print(lab.jobs.wait(job.id).status)
"""

from gpulab._version import VERSION
from gpulab.aio import AsyncClient
from gpulab.client import Client
from gpulab.errors import (
    ApiError,
    BadRequest,
    ConfigError,
    Conflict,
    ConnectionFailed,
    GpulabError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    RateLimited,
    ServerError,
    Unauthorized,
    WaitTimeout,
)
from gpulab.models import (
    Availability,
    Gpu,
    Job,
    JobEvent,
    Me,
    Notebook,
    Preview,
    Profile,
    Reservation,
    Usage,
    UsageRow,
)

__version__ = VERSION
__all__ = [
    "ApiError",
    "AsyncClient",
    "Availability",
    "BadRequest",
    "Client",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Gpu",
    "GpulabError",
    "Job",
    "JobEvent",
    "Me",
    "Notebook",
    "NotFound",
    "PermissionDenied",
    "Preview",
    "Profile",
    "QuotaExceeded",
    "RateLimited",
    "Reservation",
    "ServerError",
    "Unauthorized",
    "Usage",
    "UsageRow",
    "WaitTimeout",
]
