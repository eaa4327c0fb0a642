"""JupyterLab in the person's language: the portal's OpenID Connect `locale` claim (their language at the portal,
"pt-BR" or "en") picks the single-user server's locale. With its locale setting at "default" (as shipped),
JupyterLab shows the language of the server process's locale when its language pack is installed
(jupyterlab-language-pack-pt-BR, in the images: deploy/jupyterhub/Dockerfile, deploy/desktop/Dockerfile); a person
can still pick another in JupyterLab's Settings → Language.

Wired as the spawners' `auth_state_hook` (jupyterhub_config.py): it needs the hub to keep auth state
(JUPYTERHUB_CRYPT_KEY), else JupyterLab stays in English."""

from __future__ import annotations

from typing import Any

# The POSIX locale of each language the portal speaks (the images generate these).
LOCALES = {"pt": "pt_BR.UTF-8", "pt-br": "pt_BR.UTF-8", "en": "C.UTF-8"}


def locale_for(claim: str) -> str | None:
    """The POSIX locale for an OpenID Connect `locale` claim, or None for a language without one here."""
    tag = (claim or "").strip().lower().replace("_", "-")
    return LOCALES.get(tag) or LOCALES.get(tag.split("-")[0])


def person_language(spawner: Any, auth_state: dict | None) -> None:
    """auth_state_hook: the server starts with LANG and LC_ALL of the person's language (a new dict: the configured
    one is shared by every spawner)."""
    claims = (auth_state or {}).get("oauth_user") or {}
    posix = locale_for(str(claims.get("locale") or ""))
    if posix:
        spawner.environment = {**spawner.environment, "LANG": posix, "LC_ALL": posix, "LANGUAGE": posix.split(".")[0]}
