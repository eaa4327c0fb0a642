"""The portal's settings with the whole-portal benchmark's instruments (manage.py bench_portal sets
DJANGO_SETTINGS_MODULE=bench.web_settings for its uvicorn processes only; the portal never imports bench).

- ROOT_URLCONF bench.web_urls: the portal's urls plus the bare-stack baseline endpoint (/bench/baseline/);
- bench.web_cpu.CpuPerClassMiddleware first in MIDDLEWARE: the CPU each answer's request thread spends, summed per
  endpoint class, written to BENCH_CPU_DIR (see that module and the README).
"""

from portal.settings import *  # noqa: F403
from portal.settings import MIDDLEWARE

ROOT_URLCONF = "bench.web_urls"
MIDDLEWARE = ["bench.web_cpu.CpuPerClassMiddleware", *MIDDLEWARE]
