from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import AdminUserCreationForm
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from rest_framework.authtoken.models import TokenProxy

from accounts import audit
from accounts.audit_admin import PROFILE_FIELDS, ROLE_FIELDS, AuditedModelAdmin, audit_formset, audit_user_saved
from accounts.models import (
    Course,
    CourseRole,
    Enrollment,
    ExternalIdentity,
    MembershipSource,
    Quota,
    RoleSource,
    TeachingSource,
    User,
)
from accounts.services import enrollment_set

# DRF's clear-text tokens authenticate nothing since API tokens are stored hashed (ApiToken, on the account page); its
# app stays installed only for the migration that carried them over, so its admin page goes.
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


class _QuotaInline(admin.StackedInline):
    model = Quota
    extra = 0
    max_num = 1
    fields = Quota.LIMIT_FIELDS + ("note",)


class QuotaInline(_QuotaInline):
    fk_name = "user"
    verbose_name = gettext_lazy("quota override")


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    extra = 0
    autocomplete_fields = ["user", "course"]
    readonly_fields = ["enrolled_at"]
    fields = ["user", "course", "role", "source", "enrolled_at"]


class ExternalIdentityInline(admin.TabularInline):
    model = ExternalIdentity
    extra = 0
    fields = ["kind", "issuer", "subject", "groups", "last_seen_at"]
    readonly_fields = ["groups", "last_seen_at"]


class UserCreationForm(AdminUserCreationForm):
    def clean_username(self):
        # User.clean() refuses a name that differs only in case from an account's, naming that account (Django's
        # own check says only "already exists"); the change form gets the same from it.
        return self.cleaned_data.get("username")


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    add_form = UserCreationForm
    list_display = ["username", "full_name", "email", "role", "role_source", "is_active", "last_login"]
    list_filter = ["role", "role_source", "is_active", "courses_enrolled", "courses_taught"]
    search_fields = ["username", "first_name", "last_name", "email"]
    fieldsets = (
        (None, {"fields": ("username", "password", "role", "role_source")}),
        ("Person", {"fields": ("first_name", "last_name", "email", "usage_report_email")}),
        ("Access", {"fields": ("is_active", "is_superuser", "groups"), "classes": ["collapse"]}),
        ("Dates", {"fields": ("last_login", "date_joined"), "classes": ["collapse"]}),
    )
    add_fieldsets = ((None, {"classes": ["wide"], "fields": ("username", "role", "password1", "password2")}),)
    readonly_fields = ["last_login", "date_joined"]
    inlines = [QuotaInline, EnrollmentInline, ExternalIdentityInline]
    actions = ["make_students", "make_teachers", "deactivate"]

    @admin.display(description=gettext_lazy("Name"))
    def full_name(self, obj):
        return obj.get_full_name()

    def save_model(self, request, obj, form, change):
        # A role an admin sets by hand is theirs: the sign-in's groups leave it alone from now on (unless the admin
        # hands it back by choosing "From the sign-in's groups").
        if change and "role" in form.changed_data and "role_source" not in form.changed_data:
            obj.role_source = RoleSource.MANUAL
        stored = User.objects.filter(pk=obj.pk).first() if change else None
        before = audit.snapshot(stored, ROLE_FIELDS + PROFILE_FIELDS)
        super().save_model(request, obj, form, change)
        audit_user_saved(request, obj, before, created=not change)

    @staticmethod
    def _audit_delete(request, obj) -> None:
        audit.record(
            actor=request.user,
            action="user.delete",
            target=obj,
            before=audit.snapshot(obj, ROLE_FIELDS + PROFILE_FIELDS),
            reason="admin console",
            only_changes=False,
        )

    def delete_model(self, request, obj):
        self._audit_delete(request, obj)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset:
                self._audit_delete(request, obj)
            super().delete_queryset(request, queryset)

    def save_formset(self, request, form, formset, change):
        # A place whose role an admin changes is theirs (as in enrollment_set): the groups leave it alone from now on.
        if formset.model is Enrollment:
            for inline in formset.forms:
                if inline.instance.pk and "role" in inline.changed_data and "source" not in inline.changed_data:
                    inline.instance.source = MembershipSource.MANUAL
        audit_formset(request, formset, lambda: super(UserAdmin, self).save_formset(request, form, formset, change))

    def _set_role(self, request, queryset, role):
        # save() per user so is_staff follows the role; set by hand, the groups leave it alone.
        with transaction.atomic():
            for user in queryset:
                before = audit.snapshot(user, ROLE_FIELDS)
                user.role = role
                user.role_source = RoleSource.MANUAL
                user.save()
                audit.record(
                    actor=request.user,
                    action="role.change",
                    target=user,
                    before=before,
                    after=audit.snapshot(user, ROLE_FIELDS),
                    reason="admin console",
                )
        label = {"student": _("students"), "teacher": _("teachers")}.get(role, role)
        self.message_user(request, _("%(count)s people are now %(role)s.") % {"count": queryset.count(), "role": label})

    @admin.action(description=gettext_lazy("Make the selected people students"))
    def make_students(self, request, queryset):
        self._set_role(request, queryset.exclude(pk=request.user.pk), "student")

    @admin.action(description=gettext_lazy("Make the selected people teachers"))
    def make_teachers(self, request, queryset):
        self._set_role(request, queryset.exclude(pk=request.user.pk), "teacher")

    @admin.action(description=gettext_lazy("Deactivate the selected people (they can no longer sign in)"))
    def deactivate(self, request, queryset):
        with transaction.atomic():
            people = list(queryset.exclude(pk=request.user.pk).filter(is_active=True).select_for_update())
            count = User.objects.filter(pk__in=[person.pk for person in people]).update(is_active=False)
            for person in people:
                audit.record(
                    actor=request.user,
                    action="profile.change",
                    target=person,
                    before={"is_active": True},
                    after={"is_active": False},
                    reason="admin console",
                )
        self.message_user(
            request, ngettext("%(n)d person deactivated.", "%(n)d people deactivated.", count) % {"n": count}
        )


class CourseQuotaInline(_QuotaInline):
    fk_name = "course"
    verbose_name = gettext_lazy("quota for the course's members")


@admin.register(Course)
class CourseAdmin(AuditedModelAdmin):
    list_display = ["code", "name", "term", "term_start", "term_end", "student_count", "roster_link"]
    list_filter = ["term_end"]
    search_fields = ["code", "name"]
    date_hierarchy = "term_start"
    filter_horizontal = ["teachers"]
    inlines = [CourseQuotaInline, EnrollmentInline]

    def save_related(self, request, form, formsets, change):
        before = sorted(form.instance.teachers.values_list("username", flat=True)) if change else []
        super().save_related(request, form, formsets, change)
        after = sorted(form.instance.teachers.values_list("username", flat=True))
        audit.record(
            actor=request.user,
            action="course.teachers_change",
            target=form.instance,
            target_label=form.instance.code,
            before={"teachers": before},
            after={"teachers": after},
            course=form.instance,
            reason="admin console",
        )

    def get_queryset(self, request):
        students = Count("enrollments", filter=Q(enrollments__role=CourseRole.STUDENT), distinct=True)
        return super().get_queryset(request).annotate(student_total=students)

    @admin.display(description=gettext_lazy("Students"), ordering="student_total")
    def student_count(self, obj):
        return obj.student_total

    @admin.display(description=gettext_lazy("Roster"))
    def roster_link(self, obj):
        return format_html('<a href="{}">{}</a>', reverse("roster", args=[obj.code]), _("import / export"))


@admin.register(Enrollment)
class EnrollmentAdmin(AuditedModelAdmin):
    list_display = ["user", "course", "role", "source", "enrolled_at"]
    list_filter = ["role", "source", "course"]
    search_fields = ["user__username", "course__code"]
    autocomplete_fields = ["user", "course"]
    actions = ["make_assistants", "make_students"]

    def save_model(self, request, obj, form, change):
        # A place whose role an admin changes is theirs (as in enrollment_set): the groups leave it alone from now on.
        if change and "role" in form.changed_data and "source" not in form.changed_data:
            obj.source = MembershipSource.MANUAL
        super().save_model(request, obj, form, change)

    def _set_role(self, request, queryset, role: str) -> None:
        changed, refused = 0, []
        for enrollment in queryset.select_related("user", "course"):
            try:
                _old, did = enrollment_set(user=enrollment.user, course=enrollment.course, role=role)
            except ValidationError as exc:
                refused.append(f"{enrollment.user.username}: {'; '.join(exc.messages)}")
                continue
            changed += int(did)
        sentence = (
            _("%(count)s enrollments changed: now teaching assistants of their course.")
            if role == CourseRole.ASSISTANT
            else _("%(count)s enrollments changed: now students of their course.")
        )
        self.message_user(request, sentence % {"count": changed})
        if refused:
            self.message_user(
                request, _("Not changed: %(list)s") % {"list": " · ".join(refused)}, level=messages.WARNING
            )

    @admin.action(description=gettext_lazy("Make the selected people teaching assistants of their course"))
    def make_assistants(self, request, queryset):
        self._set_role(request, queryset, CourseRole.ASSISTANT)

    @admin.action(description=gettext_lazy("Make the selected people students of their course (no longer assistants)"))
    def make_students(self, request, queryset):
        self._set_role(request, queryset, CourseRole.STUDENT)


@admin.register(Quota)
class QuotaAdmin(AuditedModelAdmin):
    list_display = ["__str__", *Quota.LIMIT_FIELDS]
    list_filter = ["role"]
    search_fields = ["user__username", "course__code", "note"]
    autocomplete_fields = ["user", "course"]
    fieldsets = (
        (gettext_lazy("Applies to (exactly one)"), {"fields": ("role", "course", "user")}),
        (gettext_lazy("Limits (blank = inherit)"), {"fields": Quota.LIMIT_FIELDS}),
        (None, {"fields": ("note",)}),
    )


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(AuditedModelAdmin):
    """Who is who at the university's sign-in. Add a row to link an existing account to its university identity."""

    list_display = ["user", "kind", "issuer", "subject", "last_seen_at"]
    list_filter = ["kind", "issuer"]
    search_fields = ["user__username", "subject"]
    autocomplete_fields = ["user"]
    readonly_fields = ["groups", "created_at", "last_seen_at"]


@admin.register(TeachingSource)
class TeachingSourceAdmin(admin.ModelAdmin):
    """Teachers the sign-in's groups (or a roster) put in a course; those named by hand have no row here."""

    list_display = ["user", "course", "source", "added_at"]
    list_filter = ["source", "course"]
    search_fields = ["user__username", "course__code"]
    autocomplete_fields = ["user", "course"]
