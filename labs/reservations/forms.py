"""The booking form: local date and times in, aware datetimes out (the lab's time zone)."""

from __future__ import annotations

import datetime as dt

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.dates import LabDateFormField
from accounts.models import Course, Role, User
from labs.models import Node, NodeStatus
from labs.reservations.services import NodeRequest

MODES = [("count", _("Any free nodes")), ("named", _("These nodes")), ("all", _("The whole lab"))]


class ReservationForm(forms.Form):
    title = forms.CharField(
        max_length=120, label=_("Title"), help_text=_("What people will see, e.g. “DL-101 lab session”.")
    )
    date = LabDateFormField(widget=forms.DateInput(attrs={"type": "date"}), label=_("Date"))
    start = forms.TimeField(widget=forms.TimeInput(attrs={"type": "time"}), label=_("From"))
    end = forms.TimeField(widget=forms.TimeInput(attrs={"type": "time"}), label=_("Until"))
    mode = forms.ChoiceField(choices=MODES, widget=forms.RadioSelect, initial="count", label=_("Nodes"))
    node_count = forms.IntegerField(min_value=1, max_value=1000, required=False, initial=1, label=_("How many"))
    nodes = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label=_("Which"))
    course = forms.ModelChoiceField(
        queryset=Course.objects.none(), required=False, empty_label=_("No course"), label=_("Course")
    )
    repeat_weekly_until = LabDateFormField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        label=_("Repeat weekly until"),
        help_text=_("Leave empty for a single session; a weekly lab slot repeats at the same local time."),
    )
    owner = forms.ModelChoiceField(queryset=User.objects.none(), required=False, empty_label=_("Me"), label=_("For"))

    def __init__(self, *args, user: User, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["nodes"].choices = [
            (name, name) for name in Node.objects.filter(status=NodeStatus.READY).values_list("name", flat=True)
        ]
        courses = Course.objects.all() if user.is_lab_admin else Course.objects.filter(teachers=user)
        self.fields["course"].queryset = courses.order_by("code")
        self.fields["course"].to_field_name = "code"
        if user.is_lab_admin:
            self.fields["owner"].queryset = User.objects.filter(
                role__in=[Role.TEACHER, Role.ADMIN], is_active=True
            ).order_by("username")
            self.fields["owner"].to_field_name = "username"
        else:
            del self.fields["owner"]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        tz = timezone.get_current_timezone()
        day: dt.date = data["date"]
        data["starts_at"] = timezone.make_aware(dt.datetime.combine(day, data["start"]), tz)
        data["ends_at"] = timezone.make_aware(dt.datetime.combine(day, data["end"]), tz)
        if data["ends_at"] <= data["starts_at"]:
            self.add_error("end", _("End after the start (on the same day)."))
        mode = data["mode"]
        if mode == "count" and not data.get("node_count"):
            self.add_error("node_count", _("How many nodes?"))
        if mode == "named" and not data.get("nodes"):
            self.add_error("nodes", _("Tick the nodes you want."))
        if self.errors:
            return data
        data["node_request"] = NodeRequest(
            names=tuple(data.get("nodes") or ()) if mode == "named" else (),
            count=data.get("node_count") if mode == "count" else None,
            all_nodes=mode == "all",
        )
        return data
