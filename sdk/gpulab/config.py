"""Where the server URL and the token come from, first found wins: the arguments, then GPULAB_URL / GPULAB_TOKEN,
then the config file `gpulab login` writes: $GPULAB_CONFIG, else $XDG_CONFIG_HOME/gpulab/config.toml
(~/.config/gpulab/config.toml), readable by its owner only (0600).
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from pathlib import Path

from gpulab.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Settings:
    url: str
    token: str


def config_path() -> Path:
    explicit = os.environ.get("GPULAB_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base).expanduser() / "gpulab" / "config.toml"


def read_config(path: Path | None = None) -> dict[str, str]:
    path = path or config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"The config file {path} cannot be read: {exc}") from exc
    return {key: str(value) for key, value in data.items() if key in ("url", "token") and isinstance(value, str)}


def write_config(url: str, token: str, path: Path | None = None) -> Path:
    """Write the URL and token, readable by the owner only: the file is made 0600 before the token goes in."""
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)  # an older file keeps its mode on O_CREAT: make it private too
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        # json.dumps writes a string TOML reads back the same (a basic string with the same escapes).
        handle.write(f"url = {json.dumps(url)}\ntoken = {json.dumps(token)}\n")
    return path


def resolve(url: str | None = None, token: str | None = None, *, need_token: bool = True) -> Settings:
    file = {} if (url and token) else read_config()
    url = url or os.environ.get("GPULAB_URL") or file.get("url")
    token = token or os.environ.get("GPULAB_TOKEN") or file.get("token")
    if not url:
        raise ConfigError("No portal URL: run `gpulab login URL`, set GPULAB_URL, or pass url=.")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"The portal URL must start with http:// or https://, not {url!r}.")
    if need_token and not token:
        raise ConfigError("No API token: run `gpulab login`, set GPULAB_TOKEN, or pass token=.")
    return Settings(url=url.rstrip("/"), token=token or "")
