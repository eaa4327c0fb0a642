"""How an audit entry's before/after values read on the pages: `{% load audit %}` then `{{ value|audit_value:field }}`.

Entries keep the stored codes (student, True) so the CSV and the API stay stable; the pages say them in the reader's
language where the code has a label (a role, yes/no)."""

from __future__ import annotations

from django import template
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import CourseRole, Role

register = template.Library()

_LABELS = {**dict(CourseRole.choices), **dict(Role.choices)}
# The fields the services record most, by their label; any other shows its code (as in the CSV and the API).
_FIELDS = {
    "role": gettext_lazy("Role"),
    "role_source": gettext_lazy("Role from"),
    "source": gettext_lazy("Source"),
    "teacher": gettext_lazy("Teacher"),
    "teachers": gettext_lazy("Teachers"),
    "is_active": gettext_lazy("Active"),
    "language": gettext_lazy("Language"),
    "email": gettext_lazy("E-mail"),
    "username": gettext_lazy("Username"),
    "status": gettext_lazy("Status"),
    "amount": gettext_lazy("Amount"),
    "until": gettext_lazy("Until"),
    "kind": gettext_lazy("Kind"),
    "name": gettext_lazy("Name"),
    "course": gettext_lazy("Course"),
    "note": gettext_lazy("Note"),
    "reason": gettext_lazy("Reason"),
}


@register.filter
def audit_field(field: str):
    return _FIELDS.get(field, field)


@register.filter
def audit_value(value, field: str = ""):
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if field.endswith("role") and isinstance(value, str) and value in _LABELS:
        return _LABELS[value]
    return value
