"""Invitations: the e-mail a roster sends to someone the portal did not know, with a one-time sign-in link.

The link carries a random token; only its SHA-256 is stored, so the database alone cannot sign anyone in. A link
works once (the first successful use sets `used_at` under a row lock) and only until `expires_at`
(ROSTER_INVITE_TTL_HOURS). Using it means choosing a password for the local account; after that the person signs in
as everyone else does. The e-mails go out through Django's e-mail framework after the roster's transaction commits,
all of one import over one SMTP connection; one that cannot be sent gets the person who imported the roster a notice
saying so.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from portal.accounts.models import Course, RosterInvitation, User
from portal.accounts.selectors import token_hash
from portal.accounts.services import notice_send

log = logging.getLogger(__name__)


def invitation_create(
    *,
    user: User,
    course: Course,
    by: User | None,
    link_base: str = "",
    now: dt.datetime | None = None,
    send: bool = True,
) -> tuple[RosterInvitation, str]:
    """Make the invitation and (send) send its e-mail once the transaction commits. Returns it and its link; with
    send=False the caller sends it, with others, through `invitations_send`."""
    now = now or timezone.now()
    token = secrets.token_urlsafe(32)
    with transaction.atomic():
        invitation = RosterInvitation.objects.create(
            user=user,
            course=course,
            token_hash=token_hash(token),
            expires_at=now + dt.timedelta(hours=settings.ROSTER_INVITE_TTL_HOURS),
            sent_by=by,
        )
    link = (settings.PORTAL_BASE_URL or link_base.rstrip("/")) + reverse("roster-invite", args=[token])
    if send:
        transaction.on_commit(lambda: invitations_send([(invitation, link)]))
    return invitation, link


def _message(invitation: RosterInvitation, link: str, connection) -> EmailMessage:
    user, course = invitation.user, invitation.course
    expires = timezone.localtime(invitation.expires_at).strftime("%a %d %b %Y %H:%M")
    teacher = invitation.sent_by.get_full_name() or invitation.sent_by.username if invitation.sent_by else "A teacher"
    body = (
        f"Hello {user.get_full_name() or user.username},\n\n"
        f"{teacher} added you to {course.code} ({course.name}) on {settings.LAB_NAME}, the GPU lab's portal.\n"
        f"Your username is: {user.username}\n\n"
        f"Choose your password and sign in with this link (it works once, until {expires}):\n{link}\n\n"
        "If you did not expect this, ignore this e-mail; nobody can use the link without it.\n"
    )
    return EmailMessage(
        subject=f"{settings.LAB_NAME}: you are in {course.code}", body=body, to=[user.email], connection=connection
    )


def _unsent(invitation: RosterInvitation, exc: Exception) -> None:
    user, course = invitation.user, invitation.course
    log.warning("invitation %s to %s not sent: %s", invitation.pk, user.email, exc)
    if invitation.sent_by is not None:
        notice_send(
            user=invitation.sent_by,
            level="warning",
            text=f"The invitation e-mail to {user.username} <{user.email}> for {course.code} could not be sent "
            f"({exc.__class__.__name__}). Send it again from the course's roster page.",
            ref=f"invitation:{invitation.pk}:unsent",
        )


def invitations_send(invitations: list[tuple[RosterInvitation, str]]) -> int:
    """Send the invitation e-mails (invitation, link) over one SMTP connection: a roster of 300 new people is one
    connection, not 300. Returns how many went out; each one that cannot be sent is logged and told to whoever
    imported the roster (a notice), and the others still go."""
    if not invitations:
        return 0
    connection = get_connection()
    try:
        connection.open()
    except Exception as exc:  # noqa: BLE001 - SMTP, DNS or socket: the roster is in, the e-mail is what failed
        for invitation, _link in invitations:
            _unsent(invitation, exc)
        return 0
    sent = 0
    try:
        for invitation, link in invitations:
            try:
                sent += connection.send_messages([_message(invitation, link, connection)]) or 0
            except Exception as exc:  # noqa: BLE001 - one refused address does not stop the others
                _unsent(invitation, exc)
    finally:
        connection.close()
    return sent


def invitation_valid(token: str, *, now: dt.datetime | None = None) -> RosterInvitation | None:
    """The invitation of this token while its link still works (unused, not expired); None otherwise."""
    if not token or len(token) > 100:
        return None
    now = now or timezone.now()
    return (
        RosterInvitation.objects.select_related("user", "course")
        .filter(token_hash=token_hash(token), used_at__isnull=True, expires_at__gt=now, user__is_active=True)
        .first()
    )


@transaction.atomic
def invitation_accept(*, token: str, password: str, now: dt.datetime | None = None) -> User | None:
    """Use the link: set the person's password and mark the invitation used. None if the link no longer works
    (used, expired, unknown), whoever got there first."""
    now = now or timezone.now()
    invitation = invitation_valid(token, now=now)
    if invitation is None:
        return None
    claimed = RosterInvitation.objects.filter(pk=invitation.pk, used_at__isnull=True).update(used_at=now)
    if claimed != 1:
        return None
    user = User.objects.select_for_update().get(pk=invitation.user_id)
    user.set_password(password)
    user.save()
    # One link, one sign-in: the person's other open invitations stop working too.
    RosterInvitation.objects.filter(user=user, used_at__isnull=True).update(used_at=now)
    return user


@transaction.atomic
def invitation_resend(*, user: User, course: Course, by: User, link_base: str = "") -> RosterInvitation:
    """A new link for someone who has not chosen a password yet (the old links stop working)."""
    RosterInvitation.objects.filter(user=user, used_at__isnull=True).update(used_at=timezone.now())
    invitation, _ = invitation_create(user=user, course=course, by=by, link_base=link_base)
    return invitation
