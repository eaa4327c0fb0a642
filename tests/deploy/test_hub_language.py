"""JupyterLab in the person's language (issue 28): the hub turns the portal's `locale` claim into the server's
locale, and the images ship the pt-BR language pack and locale."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy" / "jupyterhub"))

from portal_hub.language import locale_for, person_language  # noqa: E402

PACK = "jupyterlab-language-pack-pt-BR==4.5.post3"


def test_the_locale_claim_picks_the_servers_locale():
    assert locale_for("pt-BR") == locale_for("pt_br") == locale_for("pt") == "pt_BR.UTF-8"
    assert locale_for("en") == "C.UTF-8"
    assert locale_for("") is None and locale_for("xx-YY") is None


def test_the_hook_sets_the_language_of_this_spawner_only():
    shared = {"JUPYTERHUB_X": "1"}
    spawner, other = SimpleNamespace(environment=shared), SimpleNamespace(environment=shared)
    person_language(spawner, {"oauth_user": {"locale": "pt-BR"}})
    assert spawner.environment["LANG"] == spawner.environment["LC_ALL"] == "pt_BR.UTF-8"
    assert spawner.environment["JUPYTERHUB_X"] == "1" and other.environment == {"JUPYTERHUB_X": "1"}
    person_language(other, None)  # no auth state (no JUPYTERHUB_CRYPT_KEY): JupyterLab's default, English
    assert "LANG" not in other.environment


def test_the_images_ship_the_portuguese_pack_and_locale():
    for dockerfile in ("deploy/jupyterhub/Dockerfile", "deploy/desktop/Dockerfile"):
        text = (ROOT / dockerfile).read_text()
        assert f'"{PACK}"' in text and "pt_BR.UTF-8 UTF-8" in text, dockerfile
    assert f'"{PACK}"' in (ROOT / "pyproject.toml").read_text()  # the run command's local servers
    assert "auth_state_hook = person_language" in (ROOT / "deploy/jupyterhub/jupyterhub_config.py").read_text()
