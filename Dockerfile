# syntax=docker/dockerfile:1
# GPU Lab Portal: one image for web (uvicorn), worker and beat (celery) and migrate.
# Pinned to a patch release and Debian release; bump deliberately (tests/deploy/test_dockerfile.py checks the pin).
FROM python:3.11.13-slim-bookworm

# PYTHONPATH=/app: the portal runs from its source tree (settings find templates/ and
# static/ next to the packages), so /app must win over the copy `pip install .` puts in
# site-packages, for uvicorn, manage.py and celery alike.
# DEBUG defaults to off, so the image refuses to start without a real SECRET_KEY. FORWARDED_ALLOW_IPS empty: no
# client's X-Forwarded-For is believed until the admin names the proxy in front (scripts/serve.sh, the web's CMD).
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    PORTAL_VAR_DIR=/app/var \
    STATIC_ROOT=/app/staticfiles \
    DEBUG=false \
    FORWARDED_ALLOW_IPS="" \
    HOST=0.0.0.0 \
    PORT=8000

RUN groupadd --system --gid 10001 portal \
 && useradd --system --uid 10001 --gid portal --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin portal

WORKDIR /app

# Dependencies first, read from pyproject.toml, so this layer is reused until they change: the dependencies and the
# `ldap` extra (LDAP sign-in is optional in the portal, but a lab's image supports it). python-ldap has no wheel: it
# builds against libldap and libsasl's headers, which go again afterwards (the libraries themselves stay).
COPY pyproject.toml ./
RUN apt-get update \
 && apt-get install -y --no-install-recommends libldap-2.5-0 libsasl2-2 gcc libldap2-dev libsasl2-dev \
 && python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['ldap']))" \
        > /tmp/requirements.txt \
 && pip install --no-cache-dir -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt \
 && apt-get purge -y gcc libldap2-dev libsasl2-dev \
 && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/*

COPY . .
# The translations are built here (Debian's gettext: msgfmt), then gettext goes again.
RUN pip install --no-cache-dir '.[ldap]' \
 && rm -rf build ./*.egg-info \
 && apt-get update \
 && apt-get install -y --no-install-recommends gettext \
 && DEBUG=true python manage.py compilemessages -v0 \
 && apt-get purge -y gettext \
 && apt-get autoremove -y \
 && rm -rf /var/lib/apt/lists/*

# Static files are collected into the image (served by WhiteNoise from the read-only root filesystem, with
# hashed names from the manifest). With DEBUG off the settings want every secret (the signing key when they load,
# the others at start): these dummies (and a throw-away signing key) exist only for this step, never at run time.
RUN key="$(mktemp)" \
 && python -c "import sys; from cryptography.hazmat.primitives import serialization as s; from cryptography.hazmat.primitives.asymmetric import rsa; open(sys.argv[1], 'wb').write(rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))" "$key" \
 && DEBUG=false SECRET_KEY=collectstatic-build-only-not-a-secret NOTEBOOKS_HUB_TOKEN=build-only \
        HUB_OAUTH_CLIENT_SECRET=build-only OIDC_RSA_PRIVATE_KEY_FILE="$key" \
        python manage.py collectstatic --noinput \
 && rm -f "$key" \
 && mkdir -p /app/var \
 && chown portal:portal /app/var

# A numeric user, so Kubernetes' runAsNonRoot can verify it without the image's /etc/passwd.
USER 10001:10001
EXPOSE 8000

# No curl in slim. The request goes to 127.0.0.1, so ALLOWED_HOSTS must include it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

# uvicorn on HOST:PORT, believing X-Forwarded-* only from the proxies FORWARDED_ALLOW_IPS names.
CMD ["scripts/serve.sh"]
