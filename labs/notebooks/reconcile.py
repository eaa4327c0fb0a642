"""The notebooks' reconcile steps (labs/reconcile.py): the hub's servers against the portal's sessions.

- A hub server the portal does not know (`nb<id>` with no such session, a session of someone else, or one that has
  ended) is stopped once it has been so for RECONCILE_GRACE_S. Servers not named `nb<id>` are not the portal's
  (the hub's default servers, someone's own) and are left alone.
- A ready notebook whose hub server vanished is ended, its GPU released and its owner told.
"""

from __future__ import annotations

import datetime as dt
import re

from django.conf import settings

from labs.models import NotebookSession, NotebookStatus
from labs.notebooks.hub_client import hub
from labs.notebooks.services import notebook_server_gone
from labs.reconcile import Action, register_step

SERVER_NAME = re.compile(r"^nb([0-9]+)$")
KNOWN = (NotebookStatus.STARTING, NotebookStatus.READY, NotebookStatus.STOPPING)


def _older(moment: dt.datetime | None, now: dt.datetime) -> bool:
    return moment is not None and (now - moment).total_seconds() >= settings.RECONCILE_GRACE_S


def stop_unknown_servers(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    client = hub()
    servers = client.active_servers()  # listed first: a session read after it has at least begun starting
    ours = {key: int(m[1]) for key in servers if (m := SERVER_NAME.match(key[1]))}
    sessions = NotebookSession.objects.in_bulk(set(ours.values()))
    actions = []
    for (user, name), session_id in sorted(ours.items()):
        session = sessions.get(session_id)
        if session is not None and session.hub_user == user and session.status in KNOWN:
            continue
        if not _older(servers[(user, name)].started, now):
            continue
        if session is not None and session.hub_user == user and not _older(session.stopped_at, now):
            continue  # just ended: the pass is stopping it
        why = "no such notebook" if session is None or session.hub_user != user else f"notebook {session.status}"
        sentence = f"stopped the hub server {user}/{name} that the portal does not run ({why})"
        if dry_run:
            actions.append(Action("unknown_server", f"{user}/{name}", sentence, done=False))
            continue
        client.stop(user, name)
        actions.append(Action("unknown_server", f"{user}/{name}", sentence))
    return actions


def end_vanished_notebooks(*, now: dt.datetime, dry_run: bool = False) -> list[Action]:
    # Sessions read before the hub is asked: a session ready now had its server up when the hub answers.
    ready = list(NotebookSession.objects.filter(status=NotebookStatus.READY).select_related("user"))
    if not ready:
        return []
    servers = hub().active_servers()
    actions = []
    for session in ready:
        if (session.hub_user, session.server_name) in servers:
            continue
        sentence = f"ended notebook {session.pk} of {session.hub_user}: its hub server vanished; the owner is told"
        if dry_run:
            actions.append(Action("lost_notebook", session.ref, sentence, done=False))
        elif notebook_server_gone(session=session, now=now):
            actions.append(Action("lost_notebook", session.ref, sentence))
    return actions


register_step("notebooks-unknown-servers", stop_unknown_servers, order=30)
register_step("notebooks-vanished", end_vanished_notebooks, order=40)
