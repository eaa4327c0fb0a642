"""The notebook forms: Start (one profile), and the profile form for teachers and admins.

They only reshape input; the rules are the services' (notebook_request, profile_save), so the pages and the API
refuse the same things with the same sentences.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Course, Role, User
from labs.inventory import RTX_4090_MEMORY_MB
from labs.models import NotebookProfile
from labs.notebooks.profiles import PROFILE_FIELDS

FRACTIONS = [(1 / 8, "⅛"), (1 / 5, "⅕"), (1 / 4, "¼"), (1 / 3, "⅓"), (1 / 2, "½"), (3 / 4, "¾")]


def share_label(share: Decimal | float) -> str:
    """A GPU share as people say it: "¼ of an RTX 4090", "a whole RTX 4090" (static/js/notebooks.js agrees)."""
    share = float(share)
    if share >= 1:
        return gettext("a whole RTX 4090")
    for value, glyph in FRACTIONS:
        if abs(share - value) < 0.002:
            return gettext("%(share)s of an RTX 4090") % {"share": glyph}
    return gettext("%(share)s %% of an RTX 4090") % {
        "share": Decimal(str(share * 100)).quantize(Decimal("1"), rounding=ROUND_HALF_UP)
    }


def hours_label(hours: Decimal | float) -> str:
    minutes = round(float(hours) * 60)
    if minutes % 60 == 0:
        return f"{minutes // 60}\u00a0h"
    if minutes < 60:
        return f"{minutes}\u00a0min"
    return f"{minutes // 60}\u00a0h {minutes % 60}\u00a0min"


def number_label(value: Decimal | float) -> str:
    return f"{Decimal(str(value)).normalize():f}"


def profile_card(profile: NotebookProfile) -> dict:
    """What a profile's card says: its share of the GPU, GPU memory, CPU, memory and longest session."""
    gpu_mem_mb = profile.gpu_mem_mb or int(profile.gpu_share * RTX_4090_MEMORY_MB)
    return {
        "profile": profile,
        "share": share_label(profile.gpu_share),
        "gpu_mem": f"{gpu_mem_mb / 1024:.0f} GB",
        "cpu": number_label(profile.cpu),
        "cpu_plural": 1 if profile.cpu == 1 else 2,  # ngettext's count is an integer: one core, or any other amount
        "memory": number_label(profile.memory_gb),
        "session": hours_label(profile.max_session_h),
    }


class NotebookStartForm(forms.Form):
    # Not a ChoiceField: an unknown or forbidden profile gets notebook_request's sentence, as in the API.
    profile = forms.CharField(max_length=40, required=False)


class NotebookProfileForm(forms.ModelForm):
    roles = forms.MultipleChoiceField(
        choices=Role.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Offered to every"),
        help_text=_("Every person of these roles may start it, whatever their courses."),
    )
    courses = forms.ModelMultipleChoiceField(
        queryset=Course.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label=_("Courses"),
        help_text=_("Students taking these courses (and their teachers) may start it."),
    )

    class Meta:
        model = NotebookProfile
        fields = [*PROFILE_FIELDS, "roles", "courses"]
        labels = {
            "name": _("Name"),
            "slug": _("Short name"),
            "description": _("Description"),
            "image": _("Image"),
            "gpu_share": _("GPU share"),
            "gpu_mem_mb": _("GPU memory cap (MB)"),
            "cpu": _("CPU cores"),
            "memory_gb": _("Memory (GB)"),
            "max_session_h": _("Longest session (hours)"),
        }

    def __init__(self, *args, user: User, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        if user.is_lab_admin:
            self.fields["courses"].queryset = Course.objects.order_by("code")
        else:
            # Teachers offer profiles to the courses they teach, never to a whole role.
            self.fields["courses"].queryset = Course.objects.filter(teachers=user).order_by("code")
            self.fields["courses"].help_text = _("Students taking these courses of yours may start it.")
            del self.fields["roles"]
        if self.instance.pk is not None:
            for name in ("gpu_share", "cpu", "memory_gb", "max_session_h"):
                if not self.is_bound:
                    self.initial[name] = number_label(getattr(self.instance, name))  # 0.25, not 0.250
            self.fields["slug"].disabled = True
            self.fields["slug"].help_text = _("Scripts use it; it stays as it is.")
        self.fields["gpu_share"].help_text = _("Share of one RTX 4090 from 0.05 to 1, e.g. 0.25 for a quarter.")
        self.fields["description"].widget = forms.Textarea(attrs={"rows": 2})
        for name in ("slug", "image"):
            self.fields[name].widget.attrs["spellcheck"] = "false"

    def _post_clean(self):
        # The model's rules are checked once, by profile_save, on the row it writes.
        pass

    def service_fields(self) -> dict:
        """What profile_save takes."""
        data = self.cleaned_data
        fields = {name: data.get(name) for name in ("name", "description", "image", "gpu_mem_mb")}
        fields.update(
            slug=data.get("slug") or self.instance.slug,
            gpu_share=data["gpu_share"],
            cpu=data["cpu"],
            memory_gb=data["memory_gb"],
            max_session_h=data["max_session_h"],
            courses=list(data.get("courses") or []),
            # A teacher's form has no roles: the profile keeps the ones it has (none, unless an admin set them).
            roles=data["roles"] if "roles" in self.fields else list(self.instance.roles or []),
        )
        return fields
