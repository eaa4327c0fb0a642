"""Node agents' keys (only a hash is stored); what they push is services.agent_push.

A key is shown once, when it is issued; the database keeps its SHA-256 (keys are 256 random
bits, so a fast hash is enough) and its first characters, to tell keys apart in the admin.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets

from django.db import transaction
from django.utils import timezone

from labs.models import Node, NodeAgentToken

PREFIX = "gna_"
# Writing last_used_at on every push (every second, every node) would be a write per second per node.
TOUCH_EVERY = dt.timedelta(minutes=1)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def agent_key_assign(token: NodeAgentToken) -> str:
    """Give an unsaved token a new key; the key is returned, only its hash and prefix are kept."""
    key = PREFIX + secrets.token_urlsafe(32)
    token.key_hash = _hash(key)
    token.prefix = key[:12]
    return key


@transaction.atomic
def agent_token_issue(*, node: Node, by=None, revoke_others: bool = False) -> tuple[NodeAgentToken, str]:
    """A new key for the node's agent: (the row, the key to hand to the node once)."""
    if revoke_others:
        NodeAgentToken.objects.filter(node=node, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token = NodeAgentToken(node=node, created_by=by)
    key = agent_key_assign(token)
    token.save()
    return token, key


def agent_token_revoke(*, token: NodeAgentToken) -> NodeAgentToken:
    NodeAgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def agent_token_check(key: str) -> NodeAgentToken | None:
    """The active token with this key, or None."""
    if not key.startswith(PREFIX) or len(key) > 100:
        return None
    digest = _hash(key)
    token = NodeAgentToken.objects.select_related("node").filter(key_hash=digest, revoked_at__isnull=True).first()
    if token is None or not hmac.compare_digest(token.key_hash, digest):
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= TOUCH_EVERY:
        NodeAgentToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
