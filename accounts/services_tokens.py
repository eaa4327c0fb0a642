"""Writes about API tokens (re-exported by accounts.services): make, revoke, authenticate. Each write is audited."""

from __future__ import annotations

import datetime as dt
import secrets

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts import audit
from accounts.errors import InvalidInput, NotFound
from accounts.models import ApiToken, TokenSource, User
from accounts.selectors import token_find, token_hash, token_refusal, tokens_of

TOKEN_PREFIX = "glp_"
# Writing last_used_at on every call would be a write per API request.
TOKEN_TOUCH_EVERY = dt.timedelta(minutes=1)


TOKEN_LIFETIME_MAX_DAYS = 3650  # the longest lifetime one may ask for when the lab sets none (API_TOKEN_TTL_DAYS 0)


def token_expiry(*, days: int | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """When a token made now for `days` days expires: None (until revoked) only when API_TOKEN_TTL_DAYS is 0.

    `days` None means the lab's default (API_TOKEN_TTL_DAYS); more than it is refused (InvalidInput), and without a
    default (0) more than TOKEN_LIFETIME_MAX_DAYS (ten years: far enough, and well short of the calendar's end)."""
    ttl = settings.API_TOKEN_TTL_DAYS
    if days is None:
        days = ttl or None
    elif days < 1 or days > (ttl or TOKEN_LIFETIME_MAX_DAYS):
        limit = _("between 1 and %(max)s days") % {"max": ttl or TOKEN_LIFETIME_MAX_DAYS}
        raise InvalidInput(_("A token's lifetime is %(limit)s.") % {"limit": limit}, fields={"expires_in_days": limit})
    return None if days is None else (now or timezone.now()) + dt.timedelta(days=days)


@transaction.atomic
def token_create(
    *,
    user: User,
    name: str = "",
    expires_in_days: int | None = None,
    now: dt.datetime | None = None,
    capped: bool = True,
    source: str = TokenSource.SESSION,
) -> tuple[ApiToken, str]:
    """A new API token for the person: (the row, the key, which is shown once and stored only hashed).

    At most API_TOKENS_MAX live tokens per person (capped: what people ask for, on the page and the API): one more
    is refused with a sentence saying to revoke one. `source` says what made it: a browser session's token (the
    account page) records the person's session generation and ends with their sessions (sessions_end_everywhere)."""
    User.objects.select_for_update().filter(pk=user.pk).first()  # one count-and-insert at a time per person
    live = tokens_of(user).count() if capped else 0
    if live >= settings.API_TOKENS_MAX:
        raise InvalidInput(
            _("You already have %(n)s API tokens, the most one person may hold: revoke one on your account page.")
            % {"n": live},
            fields={"name": "too many tokens"},
        )
    expires_at = token_expiry(days=expires_in_days, now=now)
    key = TOKEN_PREFIX + secrets.token_urlsafe(32)
    generation = None
    if source == TokenSource.SESSION:
        generation = User.objects.filter(pk=user.pk).values_list("session_generation", flat=True).get()
    token = ApiToken.objects.create(
        user=user,
        name=name.strip()[:100],
        key_hash=token_hash(key),
        prefix=key[:12],
        expires_at=expires_at,
        source=source,
        session_generation=generation,
    )
    audit.record(
        action="token.create",
        target=token,
        target_label=f"{user.username}: {token.prefix}… {token.name}".strip(),
        after={"user": user.username, "name": token.name, "expires_at": expires_at, "source": source},
        only_changes=False,
    )
    return token, key


def token_issue(*, user: User, regenerate: bool = False, name: str = "") -> str:
    """A new API token's key for an operator (`portal_user --token`, the benchmarks, tests): not capped; with
    regenerate the person's others are revoked first."""
    if regenerate:
        token_revoke_all(user=user)
    return token_create(user=user, name=name, capped=False, source=TokenSource.OPERATOR)[1]


@transaction.atomic
def token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of the person's tokens: scripts using it get 401 from now on. Someone else's: NotFound."""
    token = ApiToken.objects.select_for_update().filter(user=user, pk=token_id).first()
    if token is None:
        raise NotFound(_("No such API token."))
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit.record(
            action="token.revoke",
            target=token,
            target_label=f"{user.username}: {token.prefix}… {token.name}".strip(),
            before={"revoked_at": None},
            after={"revoked_at": token.revoked_at},
        )
    return token


@transaction.atomic
def token_revoke_all(*, user: User) -> int:
    """Revoke every token of the person; how many were live."""
    count = ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
    if count:
        audit.record(action="token.revoke_all", target=user, before={"live_tokens": count}, after={"live_tokens": 0})
    return count


def token_authenticate(key: str, *, now: dt.datetime | None = None) -> tuple[ApiToken | None, str | None]:
    """(the token, None) for a key that works, marking it used (at most once a minute);
    (None or the token, the 401's sentence) otherwise."""
    token = token_find(key)
    if token is None:
        return None, _("Invalid token.")
    refusal = token_refusal(token, now=now)
    if refusal is not None:
        return token, refusal
    moment = now or timezone.now()
    if token.last_used_at is None or moment - token.last_used_at >= TOKEN_TOUCH_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=moment)
        token.last_used_at = moment
    return token, None
