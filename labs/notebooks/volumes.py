"""What a person's notebook mounts besides its home: datasets and course shares. They are defined a floor up (jobs,
jobs.datasets), which registers its provider here at start (jobs/apps.py), as labs never imports jobs.

A provider takes the person and returns dicts {name, claim, local_path, mount_path, writable}: signed into the
notebook's options (labs.notebooks.passes) and bound by the hub's spawner (deploy/jupyterhub/portal_hub).
"""

from __future__ import annotations

from collections.abc import Callable

from accounts.models import User

_providers: list[Callable[[User], list[dict]]] = []


def register_volume_source(provider: Callable[[User], list[dict]]) -> None:
    if provider not in _providers:
        _providers.append(provider)


def notebook_volumes(user: User) -> list[dict]:
    return [volume for provider in _providers for volume in provider(user)]
