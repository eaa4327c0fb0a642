"""KubeSpawner for the portal's notebooks: the options come from the portal, not from a profile list."""

from __future__ import annotations

from kubespawner import KubeSpawner


class PortalKubeSpawner(KubeSpawner):
    """KubeSpawner without its profile handling.

    `portal_hub.options.apply_hook` has already checked and applied the portal's options (image, resources, node,
    GPU, session end) before `start()`; KubeSpawner would otherwise read their ``profile`` key as the slug of a
    profile_list entry and refuse the spawn, since the hub has no profile list.
    """

    async def load_user_options(self) -> None:
        return None
