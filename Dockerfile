# syntax=docker/dockerfile:1
# GPU Lab Portal: one image for web (uvicorn), worker and beat (celery) and migrate.
FROM python:3.11-slim

# PYTHONPATH=/app: the portal runs from its source tree (settings find templates/ and
# static/ next to the packages), so /app must win over the copy `pip install .` puts in
# site-packages, for uvicorn, manage.py and celery alike.
# DEBUG defaults to off, so the image refuses to start without a real SECRET_KEY.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    PORTAL_VAR_DIR=/app/var \
    STATIC_ROOT=/app/staticfiles \
    DEBUG=false

RUN groupadd --system --gid 10001 portal \
 && useradd --system --uid 10001 --gid portal --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin portal

WORKDIR /app

# Dependencies first, read from pyproject.toml, so this layer is reused until they change.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

COPY . .
RUN pip install --no-cache-dir . \
 && rm -rf build ./*.egg-info

# Static files are collected into the image (served by WhiteNoise). The settings need a
# SECRET_KEY with DEBUG off; this dummy exists only for this step, never at run time.
RUN DEBUG=false SECRET_KEY=collectstatic-build-only-not-a-secret \
        python manage.py collectstatic --noinput \
 && mkdir -p /app/var \
 && chown portal:portal /app/var

USER portal
EXPOSE 8000

# No curl in slim. The request goes to 127.0.0.1, so ALLOWED_HOSTS must include it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

CMD ["uvicorn", "portal.asgi:application", "--host", "0.0.0.0", "--port", "8000", "--proxy-headers"]
