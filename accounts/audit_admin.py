"""The admin console's edits in the audit trail: Django's admin writes rows itself (not through the services), so
its save/delete hooks record what changed in the same transaction (the admin's change and delete views run in
one). Entries themselves are read-only there (AuditEntryAdmin)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin
from django.db import models, transaction

from accounts import audit
from accounts.models import AuditEntry, Enrollment, ExternalIdentity, Quota, User

ROLE_FIELDS = ("role", "role_source", "is_superuser")
PROFILE_FIELDS = ("username", "first_name", "last_name", "email", "usage_report_email", "is_active")


@dataclass(frozen=True)
class Audited:
    """How one model's admin edits read in the trail: the action codes, the fields kept, the course it belongs to."""

    create: str
    change: str
    delete: str
    fields: tuple[str, ...]
    course: Callable[[models.Model], int | None] = lambda obj: None
    target: Callable[[models.Model], models.Model] = lambda obj: obj


AUDITED: dict[type[models.Model], Audited] = {
    Quota: Audited(
        "quota.change",
        "quota.change",
        "quota.remove",
        ("role", "course", "user", *Quota.LIMIT_FIELDS, "note"),
        course=lambda obj: obj.course_id,
    ),
    Enrollment: Audited(
        "course.member_add",
        "course.member_change",
        "course.member_remove",
        ("user", "course", "role", "source"),
        course=lambda obj: obj.course_id,
        target=lambda obj: obj.user,
    ),
    ExternalIdentity: Audited(
        "signin.identity_link",
        "signin.identity_change",
        "signin.identity_remove",
        ("user", "kind", "issuer", "subject"),
        target=lambda obj: obj.user,
    ),
}


def audited_for(model: type[models.Model]) -> Audited | None:
    return AUDITED.get(model)


def _stored(obj: models.Model) -> models.Model | None:
    return type(obj)._default_manager.filter(pk=obj.pk).first() if obj.pk else None


def _write(request, spec: Audited, action: str, obj: models.Model, before: dict, after: dict) -> None:
    audit.record(
        actor=request.user,
        action=action,
        target=spec.target(obj),
        before=before,
        after=after,
        course=spec.course(obj),
        reason="admin console",
        only_changes=action != spec.delete,
    )


def audit_formset(request, formset, save: Callable[[], None]) -> None:
    """Save an inline formset, recording each of its rows that changed (for the models in AUDITED)."""
    spec = audited_for(formset.model)
    if spec is None:
        save()
        return
    befores = {}
    for form in formset.forms:
        if form.instance.pk:
            befores[form.instance.pk] = audit.snapshot(_stored(form.instance), spec.fields)
    save()
    for obj in formset.deleted_objects:
        _write(request, spec, spec.delete, obj, befores.get(obj.pk, {}), {})
    for obj in formset.new_objects:
        _write(request, spec, spec.create, obj, {}, audit.snapshot(obj, spec.fields))
    for obj, _changed in formset.changed_objects:
        _write(request, spec, spec.change, obj, befores.get(obj.pk, {}), audit.snapshot(obj, spec.fields))


class AuditedModelAdmin(admin.ModelAdmin):
    """A ModelAdmin whose saves and deletes of a model in AUDITED (and of audited inlines) leave audit entries."""

    def save_model(self, request, obj, form, change):
        spec = audited_for(type(obj))
        before = audit.snapshot(_stored(obj), spec.fields) if spec and change else {}
        super().save_model(request, obj, form, change)
        if spec:
            _write(request, spec, spec.change if change else spec.create, obj, before, audit.snapshot(obj, spec.fields))

    def delete_model(self, request, obj):
        spec = audited_for(type(obj))
        if spec:
            _write(request, spec, spec.delete, obj, audit.snapshot(obj, spec.fields), {})
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        spec = audited_for(queryset.model)
        with transaction.atomic():
            if spec:
                for obj in queryset:
                    _write(request, spec, spec.delete, obj, audit.snapshot(obj, spec.fields), {})
            super().delete_queryset(request, queryset)

    def save_formset(self, request, form, formset, change):
        audit_formset(
            request, formset, lambda: super(AuditedModelAdmin, self).save_formset(request, form, formset, change)
        )


def audit_user_saved(request, user: User, before: dict, *, created: bool) -> None:
    """The account page of the admin: a new account, or its role and profile changes, as entries."""
    after = audit.snapshot(user, ROLE_FIELDS + PROFILE_FIELDS)
    if created:
        audit.record(actor=request.user, action="user.create", target=user, after=after, reason="admin console")
        return
    for action, names in (("role.change", ROLE_FIELDS), ("profile.change", PROFILE_FIELDS)):
        audit.record(
            actor=request.user,
            action=action,
            target=user,
            before={k: v for k, v in before.items() if k in names},
            after={k: v for k, v in after.items() if k in names},
            reason="admin console",
        )


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    """Read-only: entries are written by the services and removed only by the retention sweep."""

    list_display = ["at", "actor_name", "action", "target_type", "target_label", "reason", "request_id"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor_name", "target_label", "target_id", "reason", "request_id"]
    date_hierarchy = "at"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
