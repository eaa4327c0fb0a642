"""The submit form: a person's way of writing a request (one argument per line, NAME=value lines).

It only reshapes input; every rule is job_submit's, so the page and the API refuse the same things.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from accounts.models import User
from accounts.timefmt import fmt_datetime, fmt_time
from jobs.models import PriorityClass
from jobs.selectors import datasets_available, reservations_for_jobs

RUNTIMES = [
    (600, _("10 minutes")),
    (3600, _("1 hour")),
    (4 * 3600, _("4 hours")),
    (24 * 3600, _("24 hours")),
    (3 * 24 * 3600, _("3 days")),
    (7 * 24 * 3600, _("7 days")),
]


class JobForm(forms.Form):
    name = forms.CharField(
        max_length=120, label=_("Name"), help_text=_("What you will recognise it by, e.g. “resnet50 lr 0.1”.")
    )
    image = forms.CharField(max_length=255, label=_("Image"), help_text=_("A container image on the lab's allow-list."))
    command = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        label=_("Command"),
        help_text=_(
            "One argument per line, e.g. python / train.py / --epochs / 3. No shell: pipes and && are not run."
        ),
    )
    gpus = forms.IntegerField(min_value=1, initial=1, label=_("GPUs per node"))
    nodes = forms.IntegerField(min_value=1, initial=1, label=_("Nodes"))
    max_runtime_s = forms.TypedChoiceField(choices=RUNTIMES, coerce=int, initial=3600, label=_("Max runtime"))
    priority = forms.ChoiceField(choices=PriorityClass.choices, initial=PriorityClass.NORMAL, label=_("Priority"))
    reservation = forms.TypedChoiceField(coerce=int, required=False, empty_value=None, label=_("Reservation"))
    datasets = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label=_("Datasets"))
    env = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        label=_("Environment"),
        help_text=_("NAME=value, one per line."),
    )

    def __init__(self, *args, user: User, **kwargs):
        super().__init__(*args, **kwargs)
        reservations = reservations_for_jobs(user)
        self.fields["reservation"].choices = [("", _("None: the shared pool"))] + [
            (r.pk, f"{r.title} ({fmt_datetime(r.starts_at)}–{fmt_time(r.ends_at)})") for r in reservations
        ]
        self.fields["datasets"].choices = [(d.name, d.name) for d in datasets_available()]
        if not self.fields["datasets"].choices:
            del self.fields["datasets"]
        if not (user.is_teacher or user.is_lab_admin):
            self.fields["priority"].choices = [c for c in PriorityClass.choices if c[0] != PriorityClass.HIGH]

    def clean_command(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["command"].splitlines() if line.strip()]

    def clean_env(self) -> dict[str, str]:
        env = {}
        for number, line in enumerate(self.cleaned_data.get("env", "").splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.strip().partition("=")
            if not sep:
                raise forms.ValidationError(_("Line %(number)s is not NAME=value.") % {"number": number})
            env[name.strip()] = value
        return env

    def request_fields(self) -> dict:
        """What job_submit and job_preview take."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "image": data["image"],
            "command": data["command"],
            "gpus": data["gpus"],
            "nodes": data["nodes"],
            "max_runtime_s": data["max_runtime_s"],
            "priority": data["priority"],
            "reservation": data.get("reservation"),
            "env": data.get("env") or {},
            "datasets": data.get("datasets") or [],
        }
