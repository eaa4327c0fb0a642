"""The submit form: a person's way of writing a request (a command line or a script, NAME=value lines).

It only reshapes input; every rule is job_submit's, so the page and the API refuse the same things. A command line
is split into arguments as a POSIX shell splits words (`shlex`), and then run directly, without a shell: pipes,
`&&`, redirections and `$VARIABLES` need the script box, whose text the image's /bin/sh runs as a file.
"""

from __future__ import annotations

import shlex

from django import forms
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import User
from accounts.selectors import role_of
from accounts.timefmt import fmt_datetime, fmt_time, in_lab_zone
from jobs.backends.resources import parse_storage_limits
from jobs.datasets import datasets_usable_by
from jobs.models import PriorityClass
from jobs.presets import Preset
from jobs.selectors import reservations_for_jobs
from labs.images import images_offered

RUNTIMES = [
    (600, gettext_lazy("10 minutes")),
    (3600, gettext_lazy("1 hour")),
    (4 * 3600, gettext_lazy("4 hours")),
    (8 * 3600, gettext_lazy("8 hours")),
    (24 * 3600, gettext_lazy("24 hours")),
    (3 * 24 * 3600, gettext_lazy("3 days")),
    (7 * 24 * 3600, gettext_lazy("7 days")),
]
COMMAND, SCRIPT = "command", "script"
# Words a shell would read as an operator: without a shell they would reach the program as arguments.
SHELL_OPERATORS = frozenset({"|", "||", "&", "&&", ";", ";;", "<", ">", ">>", "<<", "2>", "2>&1", ">&", "&>", "(", ")"})


def split_command_line(text: str) -> list[str]:
    """`text` split into argv as a POSIX shell splits words; ValidationError for what only a shell could run."""
    try:
        argv = shlex.split(text)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise forms.ValidationError(
            _("This line cannot be split into arguments (%(why)s): close every quote.") % {"why": str(exc).lower()}
        ) from exc
    # Operators as the shell would see them: unquoted, alone or glued to a word (`a|b`, `cmd>out`).
    lexer = shlex.shlex(text, posix=False, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an escaped quote, which only the POSIX reading above understands
        words = []
    used = sorted({word for word in words if word in SHELL_OPERATORS})
    if used:
        raise forms.ValidationError(
            _("%(operators)s need a shell, and a command line runs without one: use the script box instead.")
            % {"operators": " ".join(used)}
        )
    if not argv:
        raise forms.ValidationError(_("Required: the program and its arguments, e.g. python train.py --epochs 3."))
    return argv


def when_span(start, end) -> str:
    """A reservation's window by the one rule for time (accounts.timefmt: the lab's zone, the person's language)."""
    if in_lab_zone(start).date() == in_lab_zone(end).date():
        return f"{fmt_datetime(start)}–{fmt_time(end)}"
    return f"{fmt_datetime(start)}–{fmt_datetime(end)}"


class JobForm(forms.Form):
    name = forms.CharField(
        max_length=120,
        label=gettext_lazy("Name"),
        help_text=gettext_lazy("What you will recognise it by, e.g. “resnet50 lr 0.1”."),
    )
    image = forms.CharField(
        required=False,  # the service says what is missing, as the API's
        max_length=255,
        widget=forms.Select,
        label=gettext_lazy("Image"),
        help_text=gettext_lazy("The images of the lab's allow-list, with what each one holds."),
    )
    image_other = forms.CharField(
        required=False,
        max_length=255,
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off", "class": "mono"}),
        label=gettext_lazy("Or another image"),
    )
    kind = forms.ChoiceField(
        choices=[
            (COMMAND, gettext_lazy("A command line")),
            (SCRIPT, gettext_lazy("A script")),
        ],
        initial=COMMAND,
        required=False,  # a command line unless the script is chosen
        widget=forms.RadioSelect,
        label=gettext_lazy("What to run"),
    )
    command = forms.CharField(
        required=False,
        max_length=64 * 1024,
        widget=forms.TextInput(attrs={"spellcheck": "false", "autocomplete": "off", "class": "mono"}),
        label=gettext_lazy("Command line"),
        help_text=gettext_lazy(
            'Split into arguments as a shell would (quotes and backslashes work: python -c "print(1)"), then run '
            "directly, without a shell: pipes, &&, > and $VARIABLES need a script."
        ),
    )
    script = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
        label=gettext_lazy("Script"),
        help_text=gettext_lazy(
            "Run as a file by the image's /bin/sh (a POSIX shell; a #! first line is only a comment), line by line, "
            "exactly as written. Add set -e to stop at the first failing line."
        ),
    )
    preset = forms.ChoiceField(
        required=False,  # none: the three fields below as given
        widget=forms.RadioSelect,
        label=gettext_lazy("Resources"),
    )
    gpus = forms.IntegerField(min_value=1, initial=1, label=gettext_lazy("GPUs per node"))
    nodes = forms.IntegerField(min_value=1, initial=1, label=gettext_lazy("Nodes"))
    gpu_share = forms.TypedChoiceField(
        required=False,
        coerce=float,
        empty_value=1.0,
        choices=[
            ("1", gettext_lazy("Whole GPUs")),
            ("0.5", gettext_lazy("Half of one GPU")),
            ("0.25", gettext_lazy("A quarter of one GPU")),
        ],
        initial="1",
        label=gettext_lazy("GPU share"),
        help_text=gettext_lazy(
            "A part of one GPU is for 1 GPU on 1 node; its memory is capped as the lab shares GPUs."
        ),
    )
    scratch = forms.CharField(
        required=False,
        max_length=32,
        label=gettext_lazy("Scratch storage"),
        widget=forms.TextInput(attrs={"placeholder": "50Gi"}),
    )
    bulk = forms.CharField(
        required=False,
        max_length=32,
        label=gettext_lazy("Bulk storage"),
        widget=forms.TextInput(attrs={"placeholder": "200Gi"}),
    )
    max_runtime_s = forms.TypedChoiceField(
        choices=RUNTIMES, coerce=int, initial=3600, label=gettext_lazy("Max runtime")
    )
    priority = forms.ChoiceField(choices=PriorityClass.choices, initial=PriorityClass.NORMAL)
    reservation = forms.TypedChoiceField(
        coerce=int, required=False, empty_value=None, label=gettext_lazy("Reservation")
    )
    datasets = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple)
    idle_ok_reason = forms.CharField(
        required=False,
        max_length=300,
        label=gettext_lazy("Why its GPUs may sit idle"),
        help_text=gettext_lazy(
            "Only if it waits on purpose (CPU preprocessing, a debugger); otherwise idle jobs are stopped."
        ),
    )
    env = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        label=gettext_lazy("Environment"),
        help_text=gettext_lazy("NAME=value, one per line."),
    )

    def __init__(self, *args, user: User, presets: list[Preset] = (), gpu_hours_left=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._offer_images()
        self._offer_cluster_options(user)
        self.presets = {preset.value: preset for preset in presets}
        self.fields["preset"].choices = [
            (preset.value, self._preset_label(preset, gpu_hours_left)) for preset in presets
        ] + [("", _("Custom: the GPUs, nodes and max runtime below"))]
        self.fields["preset"].initial = presets[0].value if presets else ""
        runtime = self["max_runtime_s"].value()
        if runtime and str(runtime).isdigit() and int(runtime) not in dict(RUNTIMES):
            seconds = int(runtime)  # a cloned job's own runtime (the API takes any number of seconds)
            label = _("%(hours)s h") % {"hours": f"{seconds / 3600:g}"}
            self.fields["max_runtime_s"].choices = sorted([*RUNTIMES, (seconds, label)])
        reservations = reservations_for_jobs(user)
        self.fields["reservation"].choices = [("", _("None: the shared pool"))] + [
            (r.pk, f"{r.title} ({when_span(r.starts_at, r.ends_at)})") for r in reservations
        ]
        self.fields["datasets"].choices = [(d.name, d.name) for d in datasets_usable_by(user).order_by("name")]
        if not self.fields["datasets"].choices:
            del self.fields["datasets"]
        if not (user.is_teacher or user.is_lab_admin):
            self.fields["priority"].choices = [c for c in PriorityClass.choices if c[0] != PriorityClass.HIGH]

    @staticmethod
    def initial_from(job) -> dict:
        """The form filled in from an earlier job (clone, or edit and resubmit): what it ran, where and how big."""
        return {
            "name": job.name,
            "image": job.image,
            "kind": SCRIPT if job.script else COMMAND,
            "command": job.command_line,
            "script": job.script,
            "preset": "",  # its own sizes, as the fields below say
            "gpus": job.gpus_per_node,
            "nodes": job.nodes,
            "max_runtime_s": job.max_runtime_s,
            "priority": job.priority,
            "reservation": job.reservation_id,
            "datasets": list(job.datasets),
            "idle_ok_reason": job.idle_ok_reason,
            "env": "\n".join(f"{name}={value}" for name, value in job.env.items()),
            "gpu_share": f"{job.gpu_share:g}",
            "scratch": job.scratch,
            "bulk": job.bulk,
        }

    @staticmethod
    def _preset_label(preset: Preset, left) -> str:
        uses = _("uses up to %(hours)s GPU-hours") % {"hours": f"{preset.gpu_hours:g}"}
        return (
            f"{preset.label} ({uses})"
            if left is None
            else f"{preset.label} ({uses} " + _("of your %(left)s left this week") % {"left": f"{left:.1f}"} + ")"
        )

    def _offer_cluster_options(self, user: User) -> None:
        """GPU share where the lab shares GPUs; each storage tier the person's role may ask for, with its ceiling."""
        if settings.JOBS_GPU_SHARING == "none":
            del self.fields["gpu_share"]
        ceilings = parse_storage_limits(settings.JOBS_STORAGE_LIMITS).get(role_of(user), {})
        where = {"scratch": _("fast space on the node, at /scratch, gone when the job ends"), "bulk": _("at /bulk")}
        for tier in ("scratch", "bulk"):
            if tier in ceilings:
                self.fields[tier].help_text = _("Optional: %(where)s; at most %(ceiling)s for you.") % {
                    "where": where[tier],
                    "ceiling": ceilings[tier],
                }
            else:
                del self.fields[tier]

    def _offer_images(self) -> None:
        offered = images_offered()
        choices = [("", _("Choose an image…"))]
        for image in (i for i in offered if not i.pattern):
            label = image.name + (f" — {image.description}" if image.description else "")
            choices.append((image.name, label + (" · " + _("GPU") if image.gpu else "")))
        current = self["image"].value()
        if current and current not in {value for value, _label in choices}:
            choices.append((current, current))  # a cloned job's image matched by a pattern, or a typed one
        self.fields["image"].widget.choices = choices
        patterns = [i for i in offered if i.pattern]
        if patterns:
            self.fields["image_other"].help_text = _("Any image that matches: %(patterns)s") % {
                "patterns": ", ".join(f"{i.name}" + (f" ({i.description})" if i.description else "") for i in patterns)
            }
        else:
            del self.fields["image_other"]

    def clean(self):
        data = super().clean()
        preset = self.presets.get(data.get("preset") or "")
        if preset is not None:  # a preset sets the three fields (the page's script fills them in as it is chosen)
            data["gpus"], data["nodes"], data["max_runtime_s"] = (
                preset.gpus_per_node,
                preset.nodes,
                preset.max_runtime_s,
            )
            for name in ("gpus", "nodes", "max_runtime_s"):
                self.errors.pop(name, None)
        if (data.get("image_other") or "").strip():
            data["image"] = data["image_other"].strip()
        kind = data["kind"] = data.get("kind") or COMMAND
        if kind == COMMAND:
            data["argv"] = []
            if "command" in data:  # not already refused for its length
                try:
                    data["argv"] = split_command_line(data["command"])
                except forms.ValidationError as exc:
                    self.add_error("command", exc)
        elif not (data.get("script") or "").strip():
            self.add_error("script", _("Required: the script's lines, run by the image's /bin/sh."))
        return data

    @property
    def argv(self) -> list[str]:
        """How a valid command line will be run (one argument per item); [] for a script or an invalid form."""
        data = getattr(self, "cleaned_data", {})
        return data.get("argv", []) if data.get("kind") == COMMAND else []

    def clean_env(self) -> dict[str, str]:
        env = {}
        for number, line in enumerate(self.cleaned_data.get("env", "").splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.strip().partition("=")
            if not sep:
                raise forms.ValidationError(_("Line %(number)d is not NAME=value.") % {"number": number})
            env[name.strip()] = value
        return env

    def request_fields(self) -> dict:
        """What job_submit and job_preview take."""
        data = self.cleaned_data
        is_script = data.get("kind") == SCRIPT
        return {
            "name": data["name"],
            "image": data["image"],
            "command": None if is_script else data["argv"],
            "script": data["script"].replace("\r\n", "\n") if is_script else None,
            "gpus": data["gpus"],
            "nodes": data["nodes"],
            "max_runtime_s": data["max_runtime_s"],
            "priority": data["priority"],
            "reservation": data.get("reservation"),
            "env": data.get("env") or {},
            "datasets": data.get("datasets") or [],
            "idle_ok_reason": data.get("idle_ok_reason") or "",
            "gpu_share": data.get("gpu_share") or 1.0,
            "scratch": data.get("scratch") or "",
            "bulk": data.get("bulk") or "",
        }
