"""The forms of course job templates: the teacher's (what runs, how big, which parameters) and the student's (the
parameters' values). They only reshape input; the rules are services/templates.py's, as for the API."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from jobs.forms import COMMAND, RUNTIMES, SCRIPT, split_command_line
from jobs.models import JobTemplate
from labs.images import images_offered

PARAMETERS_HELP = gettext_lazy(
    "One parameter per line: NAME | label | type | bounds or choices | default. Types: int and float (bounds as "
    "1..50), choice (choices as a, b, c), text (the longest value, e.g. 100). Without a default the student must "
    'fill it in. A value reaches the job only as the environment variable NAME (a script reads "$NAME"; in a '
    "command line, {NAME} inside an argument is replaced and stays one argument): never through a shell."
)


def parse_parameter_lines(text: str) -> list[dict]:
    """The teacher's lines as declarations (the service checks them); ValidationError for a line it cannot read."""
    declared = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split("|")]
        if len(parts) < 3 or len(parts) > 5:
            raise forms.ValidationError(
                _("Line %(number)d is not NAME | label | type | bounds or choices | default.") % {"number": number}
            )
        parts += [""] * (5 - len(parts))
        name, label, kind, bounds, default = parts
        item = {"name": name, "label": label, "type": kind, "default": default or None}
        if kind in ("int", "float") and bounds:
            low, sep, high = bounds.partition("..")
            if not sep:
                raise forms.ValidationError(
                    _("Line %(number)d: bounds are written low..high (either may be left out).") % {"number": number}
                )
            item["min"], item["max"] = low.strip() or None, high.strip() or None
        elif kind == "choice":
            item["choices"] = [c.strip() for c in bounds.split(",") if c.strip()]
        elif kind == "text" and bounds:
            item["max"] = bounds
        declared.append(item)
    return declared


def parameter_lines(declared: list[dict]) -> str:
    """Declarations written back as the form's lines."""
    lines = []
    for d in declared:
        if d["type"] in ("int", "float"):
            low, high = d.get("min"), d.get("max")
            bounds = (
                "" if low is None and high is None else f"{'' if low is None else low}..{'' if high is None else high}"
            )
        elif d["type"] == "choice":
            bounds = ", ".join(d["choices"])
        else:
            bounds = str(d.get("max", ""))
        default = "" if d.get("default") is None else str(d["default"])
        lines.append(" | ".join([d["name"], d["label"], d["type"], bounds, default]).rstrip(" |"))
    return "\n".join(lines)


class TemplateForm(forms.Form):
    name = forms.CharField(max_length=120, label=gettext_lazy("Name"))
    description = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 3}),
        label=gettext_lazy("Description"),
        help_text=gettext_lazy("What the job does and what the student should try; shown on the student's form."),
    )
    image = forms.CharField(max_length=255, widget=forms.Select, label=gettext_lazy("Image"))
    kind = forms.ChoiceField(
        choices=[(COMMAND, gettext_lazy("A command line")), (SCRIPT, gettext_lazy("A script"))],
        initial=SCRIPT,
        widget=forms.RadioSelect,
        label=gettext_lazy("What to run"),
    )
    command = forms.CharField(
        required=False,
        max_length=64 * 1024,
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off", "class": "mono"}),
        label=gettext_lazy("Command line"),
        help_text=gettext_lazy("Split into arguments as a shell would, then run without a shell."),
    )
    script = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
        label=gettext_lazy("Script"),
        help_text=gettext_lazy('Run as a file by the image\'s /bin/sh; read a parameter as "$NAME", quoted.'),
    )
    gpus = forms.IntegerField(min_value=1, max_value=64, initial=1, label=gettext_lazy("GPUs per node"))
    nodes = forms.IntegerField(min_value=1, max_value=1000, initial=1, label=gettext_lazy("Nodes"))
    max_runtime_s = forms.TypedChoiceField(
        choices=RUNTIMES, coerce=int, initial=3600, label=gettext_lazy("Max runtime")
    )
    parameters = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "class": "mono"}),
        label=gettext_lazy("Parameters"),
        help_text=PARAMETERS_HELP,
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", _("Choose an image…"))] + [
            (i.name, i.name + (f" — {i.description}" if i.description else ""))
            for i in images_offered()
            if not i.pattern
        ]
        current = self["image"].value()
        if current and current not in {value for value, _label in choices}:
            choices.append((current, current))
        self.fields["image"].widget.choices = choices

    @staticmethod
    def initial_from(template: JobTemplate) -> dict:
        return {
            "name": template.name,
            "description": template.description,
            "image": template.image,
            "kind": SCRIPT if template.script else COMMAND,
            "command": template.command_line,
            "script": template.script,
            "gpus": template.gpus_per_node,
            "nodes": template.nodes,
            "max_runtime_s": template.max_runtime_s,
            "parameters": parameter_lines(template.parameters),
        }

    def clean_parameters(self) -> list[dict]:
        return parse_parameter_lines(self.cleaned_data.get("parameters") or "")

    def clean(self):
        data = super().clean()
        data["argv"] = []
        if data.get("kind") == COMMAND and "command" in data:
            try:
                data["argv"] = split_command_line(data["command"])
            except forms.ValidationError as exc:
                self.add_error("command", exc)
        elif data.get("kind") == SCRIPT and not (data.get("script") or "").strip():
            self.add_error("script", _("Required: the script's lines, run by the image's /bin/sh."))
        return data

    def service_fields(self) -> dict:
        data = self.cleaned_data
        is_script = data["kind"] == SCRIPT
        return {
            "name": data["name"],
            "description": data.get("description") or "",
            "image": data["image"],
            "command": None if is_script else data["argv"],
            "script": data["script"].replace("\r\n", "\n") if is_script else None,
            "gpus": data["gpus"],
            "nodes": data["nodes"],
            "max_runtime_s": data["max_runtime_s"],
            "parameters": data["parameters"],
        }


class TemplateFillForm(forms.Form):
    """A student's form for one template: a name and one field per declared parameter, of its type and bounds."""

    name = forms.CharField(
        required=False, max_length=120, label=gettext_lazy("Name"), help_text=gettext_lazy("Optional.")
    )

    def __init__(self, *args, template: JobTemplate, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["name"].initial = template.name
        self.declared = template.parameters
        for d in template.parameters:
            common = {
                "label": d["label"],
                "required": "default" not in d,
                "initial": d.get("default"),
                "help_text": _("Reaches the job as $%(name)s.") % {"name": d["name"]},
            }
            if d["type"] == "int":
                field = forms.IntegerField(min_value=d.get("min"), max_value=d.get("max"), **common)
            elif d["type"] == "float":
                field = forms.FloatField(min_value=d.get("min"), max_value=d.get("max"), **common)
                field.widget.attrs["step"] = "any"
            elif d["type"] == "choice":
                field = forms.ChoiceField(choices=[(c, c) for c in d["choices"]], **common)
            else:
                field = forms.CharField(max_length=d["max"], **common)
            self.fields[f"param_{d['name']}"] = field

    def parameters(self) -> dict:
        values = {}
        for d in self.declared:
            value = self.cleaned_data.get(f"param_{d['name']}")
            if value not in (None, ""):
                values[d["name"]] = value
        return values
