"""The nbgitpuller link of a git handout: opening it in the hub pulls the repository into the student's home
(nbgitpuller's merge keeps their edits), the JupyterHub ecosystem's way; the portal's own copy does the same."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings

from labs.models import Handout, HandoutSource


def nbgitpuller_link(handout: Handout) -> str | None:
    if handout.source != HandoutSource.GIT or not handout.git_url.startswith(("https://", "http://", "git://")):
        return None
    folder = f"{handout.course.code}/{handout.slug}"
    query = {"repo": handout.git_url, "targetpath": folder, "urlpath": f"lab/tree/{folder}"}
    if handout.git_ref:
        query["branch"] = handout.git_ref
    return f"{settings.NOTEBOOKS_HUB_PUBLIC_URL}/hub/user-redirect/git-pull?{urlencode(query)}"
