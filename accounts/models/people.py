"""People: users with a role, courses with a term, enrollments (and where they came from), sign-in identities,
notices, and roster invitations."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import AbstractUser
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.dispatch import Signal
from django.utils.translation import gettext, gettext_lazy

from accounts.usernames import NamedUserManager, username_taken_sentence

# Sent in the transaction of a save that set a new password and revoked the person's live API tokens (user, count).
tokens_revoked_by_password = Signal()


class Role(models.TextChoices):
    STUDENT = "student", gettext_lazy("Student")
    TEACHER = "teacher", gettext_lazy("Teacher")
    ADMIN = "admin", gettext_lazy("Admin")


class RoleSource(models.TextChoices):
    MANUAL = "manual", gettext_lazy("Set by hand")
    IDP = "idp", gettext_lazy("From the sign-in's groups")


class PortalUserManager(NamedUserManager):
    def create_superuser(self, username, email=None, password=None, **extra_fields):
        extra_fields.setdefault("role", Role.ADMIN)
        return super().create_superuser(username, email, password, **extra_fields)


class User(AbstractUser):
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT, db_index=True)
    # Who decides the role: an admin (by hand: the sign-in's group mapping leaves it alone) or the groups the
    # university's sign-in reports (set at every sign-in). Accounts the sign-in creates start as "idp".
    role_source = models.CharField(
        max_length=8,
        choices=RoleSource.choices,
        default=RoleSource.MANUAL,
        help_text=gettext_lazy(
            "“From the sign-in's groups”: the role follows the university's groups at every sign-in."
        ),
    )
    # "Sign out everywhere" counts it up: every session signed in before carries the old count and ends.
    session_generation = models.PositiveIntegerField(default=0, editable=False)
    usage_report_email = models.BooleanField(
        default=True,
        help_text=gettext_lazy(
            "Teachers and admins: the weekly usage summary by e-mail (turned off on the account page)."
        ),
    )

    # The language the portal speaks to this person (pages, e-mails), chosen on the account page: one of
    # settings.LANGUAGES, or empty until chosen (their browser's Accept-Language decides, and e-mails go out in the
    # lab's LANGUAGE_CODE).
    language = models.CharField(
        max_length=16, blank=True, default="", help_text=gettext_lazy("Empty: the browser's language.")
    )

    objects = PortalUserManager()

    class Meta:
        verbose_name = gettext_lazy("user")
        verbose_name_plural = gettext_lazy("users")
        ordering = ["username"]
        # One person, one name: "Student2" next to "student2" is refused (the name keeps its case for display).
        constraints = [models.UniqueConstraint(Lower("username"), name="user_username_unique_ignoring_case")]

    def clean(self) -> None:
        super().clean()  # the name as Django's forms normalise it (NFKC)
        if other := User.objects.named(self.username).exclude(pk=self.pk).values_list("username", flat=True).first():
            raise ValidationError({"username": username_taken_sentence(other)})

    def save(self, *args, **kwargs):
        # The admin console is for lab admins: the role decides, Django's flag follows it.
        self.is_staff = self.role == Role.ADMIN or self.is_superuser
        # set_password() leaves the new password in _password until the save, whoever calls it: the password page,
        # the admin console, `portal_user --password`, `changepassword`. (A hash upgrade at login does not.)
        password_changed = self._password is not None
        if not password_changed:
            super().save(*args, **kwargs)
            return
        # A new password ends what the old one handed out: API tokens stop working, in the save's transaction; the
        # audit trail records it (accounts.audit receives tokens_revoked_by_password there).
        from django.db import transaction
        from django.utils import timezone

        with transaction.atomic():
            super().save(*args, **kwargs)
            count = self.api_tokens.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
            if count:
                tokens_revoked_by_password.send(sender=User, user=self, count=count)

    def _get_session_auth_hash(self, secret=None):
        # Django ends a session whose stored hash no longer matches (it is how a new password signs out everywhere);
        # the generation joins the password in it. Generation 0 keeps Django's own hash: nobody is signed out
        # by the upgrade itself.
        if not self.session_generation:
            return super()._get_session_auth_hash(secret=secret)
        from django.utils.crypto import salted_hmac

        salt = "portal.accounts.User.session_generation"  # kept from before the move: the signatures stay valid
        value = f"{self.password}|{self.session_generation}"
        return salted_hmac(salt, value, secret=secret, algorithm="sha256").hexdigest()

    def has_perm(self, perm, obj=None) -> bool:
        # Lab admins run the whole console without hand-picked Django permissions.
        return (self.is_active and self.role == Role.ADMIN) or super().has_perm(perm, obj)

    def has_module_perms(self, app_label) -> bool:
        return (self.is_active and self.role == Role.ADMIN) or super().has_module_perms(app_label)

    @property
    def is_lab_admin(self) -> bool:
        return self.role == Role.ADMIN or self.is_superuser

    @property
    def is_teacher(self) -> bool:
        return self.role == Role.TEACHER

    @property
    def is_student(self) -> bool:
        return self.role == Role.STUDENT and not self.is_superuser


course_code_validator = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$",
    "Use letters, digits, dots, dashes and underscores (at most 32), starting with a letter or digit.",
)


class Course(models.Model):
    code = models.CharField(max_length=32, unique=True, validators=[course_code_validator])
    name = models.CharField(max_length=200)
    term_start = models.DateField()
    term_end = models.DateField(
        help_text=gettext_lazy("Students lose the access this course gives them after this day.")
    )
    # The term's name as the university's groups spell it (e.g. 2026W in course-dl101-2026w-students): the sign-in
    # maps a group to this course only when the group's term is this one. Blank: groups that name no term.
    term = models.CharField(
        max_length=16, blank=True, help_text=gettext_lazy("The term as the university's groups name it, e.g. 2026W.")
    )
    teachers = models.ManyToManyField(User, related_name="courses_taught", blank=True)
    students = models.ManyToManyField(User, through="Enrollment", related_name="courses_enrolled", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = gettext_lazy("course")
        verbose_name_plural = gettext_lazy("courses")
        ordering = ["code"]
        constraints = [
            models.CheckConstraint(
                condition=Q(term_end__gte=models.F("term_start")), name="course_term_ends_after_start"
            )
        ]

    def __str__(self) -> str:
        return f"{self.code} — {self.name}"

    def clean(self) -> None:
        if self.term_start and self.term_end and self.term_end < self.term_start:
            raise ValidationError({"term_end": gettext("The term cannot end before it starts.")})

    def is_active_on(self, day: dt.date) -> bool:
        return self.term_start <= day <= self.term_end


class MembershipSource(models.TextChoices):
    """Where a place in a course came from: the sign-in's group mapping adds and removes only its own."""

    MANUAL = "manual", gettext_lazy("By hand")
    IDP = "idp", gettext_lazy("The sign-in's groups")
    ROSTER = "roster", gettext_lazy("A course roster")


class CourseRole(models.TextChoices):
    """A person's part in a course they are enrolled in. Teachers are `Course.teachers`, not enrollments."""

    STUDENT = "student", gettext_lazy("Student")
    # Between student and teacher: sees the course's students, their usage and notebooks and may stop a student's
    # notebook; books no nodes and changes no quota or profile (accounts.permissions says so).
    ASSISTANT = "assistant", gettext_lazy("Teaching assistant")


class Enrollment(models.Model):
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="enrollments")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrollments")
    role = models.CharField(max_length=16, choices=CourseRole.choices, default=CourseRole.STUDENT, db_index=True)
    enrolled_at = models.DateTimeField(auto_now_add=True)
    source = models.CharField(max_length=8, choices=MembershipSource.choices, default=MembershipSource.MANUAL)

    class Meta:
        verbose_name = gettext_lazy("enrollment")
        verbose_name_plural = gettext_lazy("enrollments")
        ordering = ["course__code", "user__username"]
        constraints = [models.UniqueConstraint(fields=["user", "course"], name="enrollment_once_per_course")]

    def __str__(self) -> str:
        part = " (teaching assistant)" if self.role == CourseRole.ASSISTANT else ""
        return f"{self.user} in {self.course.code}{part}"

    def clean(self) -> None:
        if self.role == CourseRole.ASSISTANT and self.user_id and self.user.role != Role.STUDENT:
            raise ValidationError(
                {
                    "role": gettext("%(name)s is not a student; teaching assistants are students.")
                    % {"name": self.user.username}
                }
            )


class TeachingSource(models.Model):
    """Where a teacher's place in a course (Course.teachers) came from, when not by hand.

    Course.teachers stays the one truth of who teaches; a row here says the sign-in's groups (or a roster) put
    them there, so the mapping removes only those it added and never a teacher an admin named by hand."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="teaching_sources")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="teaching_sources")
    source = models.CharField(max_length=8, choices=MembershipSource.choices)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = gettext_lazy("teaching source")
        verbose_name_plural = gettext_lazy("teaching sources")
        constraints = [models.UniqueConstraint(fields=["user", "course"], name="teaching_source_once_per_course")]

    def __str__(self) -> str:
        return f"{self.user} teaches {self.course.code} ({self.source})"


class ExternalIdentity(models.Model):
    """An account at the university's sign-in (an OpenID Connect issuer, or an LDAP directory) and whose it is.

    People are matched by (issuer, subject) — the stable `sub` claim or a configured one, the LDAP entry — never by
    e-mail or user name alone."""

    class Kind(models.TextChoices):
        OIDC = "oidc", "OpenID Connect"
        LDAP = "ldap", "LDAP"

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="external_identities")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    issuer = models.CharField(max_length=255, help_text=gettext_lazy("The OIDC issuer URL, or the LDAP server's URI."))
    subject = models.CharField(
        max_length=255, help_text=gettext_lazy("The stable claim (`sub`), or the LDAP entry (DN or id).")
    )
    groups = models.JSONField(
        default=list, blank=True, help_text=gettext_lazy("The groups the last sign-in or sync reported.")
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = gettext_lazy("external identity")
        verbose_name_plural = gettext_lazy("external identities")
        ordering = ["issuer", "subject"]
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="external_identity_once")]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer} → {self.user}"


class NoticeLevel(models.TextChoices):
    INFO = "info", gettext_lazy("Information")
    WARNING = "warning", gettext_lazy("Warning")


class Notice(models.Model):
    """Something the portal tells one person: shown on their dashboard until they dismiss it."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="notices")
    level = models.CharField(max_length=16, choices=NoticeLevel.choices, default=NoticeLevel.INFO)
    text = models.CharField(max_length=500)
    # What it is about, e.g. "reservation:12:warned"; one notice per person and ref, so a replay tells nobody twice.
    ref = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "ref"], condition=~Q(ref=""), name="notice_once_per_ref"),
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.text[:40]}"


class InvitationAnswer(models.TextChoices):
    ACCEPTED = "accepted", gettext_lazy("Accepted")
    DECLINED = "declined", gettext_lazy("Declined")
    WITHDRAWN = "withdrawn", gettext_lazy("Withdrawn by a later roster")


class RosterInvitation(models.Model):
    """A roster's one-time sign-in link for an account it made (only the token's SHA-256 is stored; works once, until
    `expires_at`), or (`consent`) its request to join to an existing account: no token, enrols only if accepted."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="roster_invitations")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="roster_invitations")
    token_hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    consent = models.BooleanField(
        default=False, help_text=gettext_lazy("A request to join: enrolled only if they accept.")
    )
    role = models.CharField(max_length=16, choices=CourseRole.choices, default=CourseRole.STUDENT)
    answer = models.CharField(max_length=16, choices=InvitationAnswer.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    sent_by = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(consent=True) | Q(token_hash__isnull=False), name="link_has_token")
        ]

    def __str__(self) -> str:
        return f"Invitation of {self.user} to {self.course.code}"
