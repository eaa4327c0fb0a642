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
DATE_FORMAT = "%Y-%m-%d"
DATE_ATTRS = {
    "inputmode": "numeric",
    "pattern": r"\d{4}-\d{2}-\d{2}",
    "placeholder": "2026-03-12",
    "autocomplete": "off",
}
DATE_HELP = _("Year-month-day, e.g. 2026-03-12.")
TIME_FORMATS = ["%H:%M", "%H.%M", "%H%M"]
TIME_ATTRS = {"inputmode": "numeric", "pattern": r"\d{1,2}[:.]?\d{2}", "placeholder": "14:00", "autocomplete": "off"}
TIME_HELP = _("24-hour clock, e.g. 14:00.")


class ReservationForm(forms.Form):
    title = forms.CharField(
        max_length=120, label=_("Title"), help_text=_("What people will see, e.g. “DL-101 lab session”.")
    )
    # One text field each, in one fixed format: a browser's date and time inputs take three Tab stops apiece
    # (month/day/year, hour/minute/AM-PM) and read dates the browser's way (03/04 is March or April).
    date = LabDateFormField(
        input_formats=[DATE_FORMAT],
        widget=forms.DateInput(format=DATE_FORMAT, attrs=DATE_ATTRS),
        label=_("Date"),
        help_text=DATE_HELP,
    )
    start = forms.TimeField(
        input_formats=TIME_FORMATS,
        widget=forms.TimeInput(format="%H:%M", attrs=TIME_ATTRS),
        label=_("From"),
        help_text=TIME_HELP,
    )
    end = forms.TimeField(
        input_formats=TIME_FORMATS,
        widget=forms.TimeInput(format="%H:%M", attrs=TIME_ATTRS),
        label=_("Until"),
        help_text=TIME_HELP,
    )
    mode = forms.ChoiceField(choices=MODES, widget=forms.RadioSelect, initial="count", label=_("Nodes"))
    node_count = forms.IntegerField(min_value=1, max_value=1000, required=False, initial=1, label=_("How many"))
    nodes = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label=_("Which"))
    course = forms.ModelChoiceField(
        queryset=Course.objects.none(), required=False, empty_label=_("No course"), label=_("Course")
    )
    repeat_weekly_until = LabDateFormField(
        required=False,
        input_formats=[DATE_FORMAT],
        widget=forms.DateInput(format=DATE_FORMAT, attrs=DATE_ATTRS),
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
