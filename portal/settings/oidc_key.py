"""The RSA key that signs ID tokens (RS256), read at start-up by the settings (notebooks.py): a helper of the settings
package, not a settings module (the package's __init__ does not compose it).

Kept apart so the settings read like a list; it needs no configured Django. A key that cannot be read, or none outside
DEBUG, raises ImproperlyConfigured as the typed env helpers do.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from accounts.env import envstr

DEV_KEY_NAME = "oidc_rsa_private.pem"


def oidc_rsa_private_key(*, debug: bool, var_dir: Path) -> str:
    """The PEM from OIDC_RSA_PRIVATE_KEY or OIDC_RSA_PRIVATE_KEY_FILE; in DEBUG, one generated once and kept."""
    pem = envstr("OIDC_RSA_PRIVATE_KEY", "")
    path = envstr("OIDC_RSA_PRIVATE_KEY_FILE", "")
    if pem and path:
        raise ImproperlyConfigured("Set OIDC_RSA_PRIVATE_KEY or OIDC_RSA_PRIVATE_KEY_FILE, not both.")
    if path:
        try:
            pem = Path(path).read_text()
        except OSError as exc:
            raise ImproperlyConfigured(f"OIDC_RSA_PRIVATE_KEY_FILE cannot be read: {exc}") from None
        source = "OIDC_RSA_PRIVATE_KEY_FILE"
    elif pem:
        source = "OIDC_RSA_PRIVATE_KEY"
    elif debug:
        return _development_key(var_dir / DEV_KEY_NAME)
    else:
        raise ImproperlyConfigured(
            "OIDC_RSA_PRIVATE_KEY or OIDC_RSA_PRIVATE_KEY_FILE (the key that signs ID tokens) must be set."
        )
    _check_rsa_private_key(pem, source)
    return pem


def _check_rsa_private_key(pem: str, source: str) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ImproperlyConfigured(f"{source} must be an unencrypted PEM private key.") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ImproperlyConfigured(f"{source} must be an RSA key (ID tokens are signed with RS256).")


def _development_key(path: Path) -> str:
    """Generate the key on first use and keep it, so a restart does not invalidate issued ID tokens."""
    if path.exists():
        return path.read_text()

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then linked into place: two processes starting at once (web server, worker) both end
    # up with the one key that won, never with half a file.
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(pem)
        os.link(temporary, path)
    except FileExistsError:
        pass
    finally:
        temporary.unlink(missing_ok=True)
    return path.read_text()
