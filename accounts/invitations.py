"""Invitations a roster sends, of two kinds (accounts.models.RosterInvitation).

- **A one-time sign-in link** for someone the portal did not know: the roster made their account (and their place in
  the course). The link carries a random token; only its SHA-256 is stored, so the database alone cannot sign anyone
  in. A link works once (the first successful use sets `used_at` under a row lock) and only until `expires_at`
  (ROSTER_INVITE_TTL_HOURS). Using it means choosing a password for the local account; after that the person signs
  in as everyone else does.
- **A request to join** for someone who already has an account: a roster cannot put an existing person into a
  course (and so before its teachers), only ask them. They answer on the invitation's page, signed in as themselves
  (the e-mail's link and their dashboard lead there), until `expires_at` (ROSTER_CONSENT_TTL_HOURS): accepting
  enrols them (source roster), declining or letting it expire enrols nobody. An admin's roster enrols at once
  (accounts/rosters.py).

The e-mails go out through Django's e-mail framework after the roster's transaction commits, all of one import over
one SMTP connection; one that cannot be sent gets the person who imported the roster a notice saying so.
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
from django.utils.translation import gettext as _

from accounts.errors import Conflict, NotFound
from accounts.locale import speaking
from accounts.models import (
    Course,
    InvitationAnswer,
    MembershipSource,
    Notice,
    Role,
    RosterInvitation,
    User,
)
from accounts.selectors import token_hash
from accounts.services import enrollment_set, notice_send
from accounts.timefmt import fmt_datetime

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
    link = _link(reverse("roster-invite", args=[token]), link_base)
    if send:
        transaction.on_commit(lambda: invitations_send([(invitation, link)]))
    return invitation, link


def _link(path: str, link_base: str) -> str:
    return (settings.PORTAL_BASE_URL or link_base.rstrip("/")) + path


def _teacher(invitation: RosterInvitation) -> str:
    sender = invitation.sent_by
    return (sender.get_full_name() or sender.username) if sender else _("A teacher")


def _values(invitation: RosterInvitation, link: str) -> dict[str, str]:
    """What both invitation e-mails say of the person, the course and the link."""
    user, course = invitation.user, invitation.course
    return {
        "name": user.get_full_name() or user.username,
        "teacher": _teacher(invitation),
        "code": course.code,
        "course": course.name,
        "lab": settings.LAB_NAME,
        "username": user.username,
        "expires": fmt_datetime(invitation.expires_at),
        "link": link,
    }


def _message(invitation: RosterInvitation, link: str, connection) -> EmailMessage:
    """The invitation e-mail, in the language of the person it goes to."""
    with speaking(invitation.user):
        if invitation.consent:
            return _request_message(invitation, link, connection)
        user = invitation.user
        values = _values(invitation, link)
        body = (
            _(
                "Hello %(name)s,\n\n"
                "%(teacher)s added you to %(code)s (%(course)s) on %(lab)s, the GPU lab's portal.\n"
                "Your username is: %(username)s\n\n"
                "Choose your password and sign in with this link (it works once, until %(expires)s):\n%(link)s\n\n"
                "If you did not expect this, ignore this e-mail; nobody can use the link without it.\n"
            )
            % values
        )
        subject = _("%(lab)s: you are in %(code)s") % values
        return EmailMessage(subject=subject, body=body, to=[user.email], connection=connection)


def _request_message(invitation: RosterInvitation, link: str, connection) -> EmailMessage:
    user = invitation.user
    values = _values(invitation, link)
    body = (
        _(
            "Hello %(name)s,\n\n"
            "%(teacher)s asks you to join %(code)s (%(course)s) on %(lab)s, the GPU lab's portal.\n"
            "You are not in the course unless you accept. Once you are, its teachers see the notebooks, jobs and "
            "GPU-hours you book to %(code)s, and nothing else of yours.\n\n"
            "Accept or decline, signed in as %(username)s, here (until %(expires)s):\n%(link)s\n\n"
            "If you do not answer, nothing changes.\n"
        )
        % values
    )
    subject = _("%(lab)s: %(teacher)s asks you to join %(code)s") % values
    return EmailMessage(subject=subject, body=body, to=[user.email], connection=connection)


def _unsent(invitation: RosterInvitation, exc: Exception) -> None:
    user, course = invitation.user, invitation.course
    log.warning("invitation %s to %s not sent: %s", invitation.pk, user.email, exc)
    if invitation.sent_by is not None and invitation.consent:
        notice_send(
            user=invitation.sent_by,
            level="warning",
            text=_(
                "The e-mail asking %(username)s to join %(code)s could not be sent (%(error)s); they still find the "
                "request on their dashboard."
            )
            % {"username": user.username, "code": course.code, "error": exc.__class__.__name__},
            ref=f"invitation:{invitation.pk}:unsent",
        )
    elif invitation.sent_by is not None:
        notice_send(
            user=invitation.sent_by,
            level="warning",
            text=_(
                "The invitation e-mail to %(username)s <%(email)s> for %(code)s could not be sent (%(error)s). Send it"
                " again from the course's roster page."
            )
            % {"username": user.username, "email": user.email, "code": course.code, "error": exc.__class__.__name__},
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
    # One link, one sign-in: the person's other open links stop working too (their requests to join still wait).
    RosterInvitation.objects.filter(user=user, consent=False, used_at__isnull=True).update(used_at=now)
    return user


@transaction.atomic
def invitation_resend(*, user: User, course: Course, by: User, link_base: str = "") -> RosterInvitation:
    """A new link for someone who has not chosen a password yet (the old links stop working)."""
    RosterInvitation.objects.filter(user=user, consent=False, used_at__isnull=True).update(used_at=timezone.now())
    invitation, _link = invitation_create(user=user, course=course, by=by, link_base=link_base)
    return invitation


# --- Requests to join: a person who already has an account decides -----------------------------------------------


def invitation_ask(
    *, user: User, course: Course, role: str, by: User | None, link_base: str = "", now: dt.datetime | None = None
) -> tuple[RosterInvitation, str] | None:
    """Ask someone who has an account to join the course as `role`: an invitation they answer, a notice on their
    dashboard; the e-mail is the caller's to send (`invitations_send`, after commit, with the link returned). None
    when a request to this course already waits for them (its role becomes `role`; nobody is asked twice)."""
    now = now or timezone.now()
    with transaction.atomic():
        waiting = (
            RosterInvitation.objects.select_for_update()
            .filter(user=user, course=course, consent=True, used_at__isnull=True, expires_at__gt=now)
            .first()
        )
        if waiting is not None:
            if waiting.role != role:
                waiting.role = role
                waiting.save(update_fields=["role"])
            return None
        invitation = RosterInvitation.objects.create(
            user=user,
            course=course,
            consent=True,
            role=role,
            expires_at=now + dt.timedelta(hours=settings.ROSTER_CONSENT_TTL_HOURS),
            sent_by=by,
        )
        values = {"teacher": _teacher(invitation), "code": course.code, "name": course.name}
        notice_send(
            user=user,
            text=_(
                "%(teacher)s asks you to join %(code)s (%(name)s). You are not in it unless you accept: answer under "
                "“Invitations to courses” on your dashboard."
            )
            % values,
            ref=f"invitation:{invitation.pk}:asked",
        )
    return invitation, _link(reverse("course-invitation", args=[invitation.pk]), link_base)


@transaction.atomic
def invitations_withdraw(*, course: Course, usernames: list[str], now: dt.datetime | None = None) -> int:
    """Withdraw the requests to join `course` still waiting for these people (a later roster left them out, or
    enrolled them itself): they can no longer accept. Returns how many."""
    now = now or timezone.now()
    waiting = RosterInvitation.objects.filter(
        course=course, consent=True, used_at__isnull=True, user__username__in=usernames
    )
    ids = list(waiting.values_list("pk", flat=True))
    RosterInvitation.objects.filter(pk__in=ids).update(used_at=now, answer=InvitationAnswer.WITHDRAWN)
    _notices_done(ids, now)
    return len(ids)


def _notices_done(invitation_ids: list[int], now: dt.datetime) -> None:
    refs = [f"invitation:{pk}:asked" for pk in invitation_ids]
    Notice.objects.filter(ref__in=refs, read_at__isnull=True).update(read_at=now)


@transaction.atomic
def invitation_answer(
    *, user: User, invitation_id: int, accept: bool, now: dt.datetime | None = None
) -> RosterInvitation:
    """The person's answer to a request to join: accepting enrols them (source roster) as the request says;
    declining enrols nobody. Someone else's request, or none: NotFound; one answered, withdrawn or expired: Conflict,
    and nothing changes. Whoever asked is told."""
    now = now or timezone.now()
    invitation = (
        RosterInvitation.objects.select_for_update(of=("self",))
        .select_related("course", "sent_by")
        .filter(pk=invitation_id, user=user, consent=True)
        .first()
    )
    if invitation is None:
        raise NotFound(_("No such invitation."))
    course = invitation.course
    if invitation.used_at is not None:
        raise Conflict(
            _("This invitation to %(code)s was already answered or withdrawn; nothing changed.") % {"code": course.code}
        )
    if invitation.expires_at <= now:
        raise Conflict(
            _("This invitation to %(code)s expired on %(when)s; nothing changed. Ask its teacher for a new one.")
            % {"code": course.code, "when": timezone.localtime(invitation.expires_at).strftime("%a %d %b %Y %H:%M")}
        )
    if accept and user.role != Role.STUDENT:
        raise Conflict(_("Courses enrol students; you are not one now, so nothing changed. Ask the lab's admins."))
    if accept:
        enrollment_set(user=user, course=course, role=invitation.role, source=MembershipSource.ROSTER)
    invitation.used_at = now
    invitation.answer = InvitationAnswer.ACCEPTED if accept else InvitationAnswer.DECLINED
    invitation.save(update_fields=["used_at", "answer"])
    _notices_done([invitation.pk], now)
    if invitation.sent_by is not None:
        values = {"username": user.username, "code": course.code}
        text = (
            _("%(username)s accepted your invitation and is now in %(code)s.")
            if accept
            else _("%(username)s declined your invitation to %(code)s.")
        )
        notice_send(user=invitation.sent_by, text=text % values, ref=f"invitation:{invitation.pk}:answered")
    return invitation
