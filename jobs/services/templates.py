"""Course job templates: a teacher declares a job and its parameters; a student fills the parameters in and submits.

Parameters are substituted safely: a value is checked against its declaration (type, bounds, choices) and then reaches
the job only as an environment variable of the parameter's name and, in a command (argv, no shell), as the text of
`{NAME}` inside an argument, which stays one argument. A script reads it as "$NAME". Nothing is ever given to a
shell to parse.
"""

from __future__ import annotations

import math
import re
from typing import Any

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from accounts.errors import InvalidInput
from accounts.models import Course, User
from jobs.backends.base import RESERVED_ENV
from jobs.backends.rules import env_reader
from jobs.models import JobTemplate
from jobs.services.validation import _check_program
from labs.images import image_problem

PARAMETER_TYPES = ("int", "float", "choice", "text")
PARAMETER_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,31}$")
MAX_PARAMETERS = 20
MAX_CHOICES = 50
MAX_TEXT = 1000
# What the template decides: a submission from it may not give these itself.
TEMPLATE_FIELDS = ("image", "command", "script", "gpus", "nodes", "max_runtime_s", "gpu_share", "course")


def _number(value: Any, kind: str) -> float | int | None:
    """`value` as an int (kind "int") or a finite float; None when it is not one."""
    if isinstance(value, bool):
        return None
    if kind == "int":
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,18}\s*", value):
            return int(value)
        return None
    try:
        number = float(value) if isinstance(value, int | float | str) else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def _declaration(raw: Any, seen: set[str]) -> tuple[dict, str | None]:
    """One declaration, cleaned, and the sentence saying what is wrong with it (None when nothing is)."""
    if not isinstance(raw, dict):
        return {}, _("Each parameter is an object with name, label, type and its bounds or choices.")
    name = raw.get("name")
    if not isinstance(name, str) or not PARAMETER_NAME.match(name):
        why = _("A parameter's name is capital letters, digits and _ (e.g. EPOCHS), at most 32; not “%(name)s”.")
        return {}, why % {"name": "" if name is None else str(name)[:40]}
    if name in seen:
        return {}, _("The parameter %(name)s is declared twice.") % {"name": name}
    if name in RESERVED_ENV or name.startswith("DATASET_") or env_reader(name) is not None:
        return {}, _("%(name)s is set by the portal or the system; choose another parameter name.") % {"name": name}
    kind = raw.get("type")
    if kind not in PARAMETER_TYPES:
        return {}, _("The type of %(name)s is one of int, float, choice and text.") % {"name": name}
    label = raw.get("label") or name
    if not isinstance(label, str) or len(label) > 80:
        return {}, _("The label of %(name)s is a text of at most 80 characters.") % {"name": name}
    clean: dict[str, Any] = {"name": name, "label": label.strip() or name, "type": kind}
    if kind in ("int", "float"):
        for bound in ("min", "max"):
            if raw.get(bound) not in (None, ""):
                value = _number(raw[bound], kind)
                if value is None:
                    return {}, _("The %(bound)s of %(name)s must be a number of its type.") % {
                        "bound": bound,
                        "name": name,
                    }
                clean[bound] = value
        if "min" in clean and "max" in clean and clean["min"] > clean["max"]:
            return {}, _("The min of %(name)s is above its max.") % {"name": name}
    elif kind == "choice":
        choices = raw.get("choices")
        if (
            not isinstance(choices, list)
            or not 1 <= len(choices) <= MAX_CHOICES
            or not all(isinstance(c, str) and c.strip() and len(c) <= 200 and "\x00" not in c for c in choices)
        ):
            return {}, _("The choices of %(name)s are a list of 1 to %(most)d texts.") % {
                "name": name,
                "most": MAX_CHOICES,
            }
        clean["choices"] = [c.strip() for c in choices]
    else:
        most = raw.get("max", 200)
        most = _number(most, "int") if most not in (None, "") else 200
        if most is None or not 1 <= most <= MAX_TEXT:
            return {}, _("The max length of %(name)s is from 1 to %(most)d characters.") % {
                "name": name,
                "most": MAX_TEXT,
            }
        clean["max"] = most
    if raw.get("default") not in (None, ""):
        value, why = parameter_value(clean, raw["default"])
        if why:
            return {}, _("The default of %(name)s does not fit: %(why)s") % {"name": name, "why": why}
        clean["default"] = value
    return clean, None


def parameter_value(declaration: dict, value: Any) -> tuple[Any, str | None]:
    """`value` checked against one declaration: (the value, None) or (None, the sentence that says what fits)."""
    kind = declaration["type"]
    if kind in ("int", "float"):
        number = _number(value, kind)
        low, high = declaration.get("min"), declaration.get("max")
        if number is None or (low is not None and number < low) or (high is not None and number > high):
            what = _("a whole number") if kind == "int" else _("a number")
            if low is not None and high is not None:
                return None, _("%(what)s from %(low)s to %(high)s.") % {"what": what, "low": low, "high": high}
            if low is not None:
                return None, _("%(what)s of at least %(low)s.") % {"what": what, "low": low}
            if high is not None:
                return None, _("%(what)s of at most %(high)s.") % {"what": what, "high": high}
            return None, _("%(what)s.") % {"what": what}
        return number, None
    if kind == "choice":
        if value not in declaration["choices"]:
            return None, _("one of %(choices)s.") % {"choices": ", ".join(declaration["choices"])}
        return value, None
    if not isinstance(value, str) or len(value) > declaration["max"] or any(ord(c) < 32 for c in value):
        return None, _("a text of one line, at most %(most)d characters.") % {"most": declaration["max"]}
    return value, None


def check_declarations(parameters: Any) -> tuple[list[dict], str | None]:
    if parameters in (None, ""):
        return [], None
    if not isinstance(parameters, list) or len(parameters) > MAX_PARAMETERS:
        return [], _("A list of at most %(most)d parameters.") % {"most": MAX_PARAMETERS}
    cleaned, seen = [], set()
    for raw in parameters:
        clean, why = _declaration(raw, seen)
        if why:
            return [], why
        seen.add(clean["name"])
        cleaned.append(clean)
    return cleaned, None


def _check_sizes(fields: dict, errors: dict[str, str]) -> dict[str, int]:
    sizes = {}
    for field, low, high in (("gpus", 1, 64), ("nodes", 1, 1000), ("max_runtime_s", 1, 30 * 86400)):
        value = _number(fields.get(field, 1 if field != "max_runtime_s" else 3600), "int")
        if value is None or not low <= value <= high:
            errors[field] = _("A whole number from %(low)d to %(high)d.") % {"low": low, "high": high}
        sizes[field] = value or low
    return sizes


def template_save(*, user: User, course: Course, template: JobTemplate | None = None, **fields: Any) -> JobTemplate:
    """Create (or, given `template`, change) a course's template. InvalidInput names every bad field."""
    errors: dict[str, str] = {}
    name = fields.get("name").strip() if isinstance(fields.get("name"), str) else ""
    if not name or len(name) > 120:
        errors["name"] = _("Give the template a name of at most 120 characters.")
    description = fields.get("description") or ""
    if not isinstance(description, str) or len(description) > 2000:
        errors["description"] = _("At most 2000 characters.")
        description = ""
    image = fields.get("image").strip() if isinstance(fields.get("image"), str) else ""
    if why := image_problem(image):
        errors["image"] = why
    argv, script = _check_program(fields.get("command"), fields.get("script"), errors)
    sizes = _check_sizes(fields, errors)
    declared, why = check_declarations(fields.get("parameters"))
    if why:
        errors["parameters"] = why
    if errors:
        raise InvalidInput(
            _("Please correct %(fields)s: ") % {"fields": ", ".join(sorted(errors))}
            + " ".join(errors[k] for k in sorted(errors)),
            fields=errors,
        )
    row = template or JobTemplate(course=course, created_by=user)
    row.name, row.description, row.image = name, description, image
    row.command, row.script = list(argv), script
    row.gpus_per_node, row.nodes, row.max_runtime_s = sizes["gpus"], sizes["nodes"], sizes["max_runtime_s"]
    row.parameters = declared
    try:
        with transaction.atomic():
            row.save()
    except IntegrityError:
        why = _("This course already has a template named “%(name)s”.") % {"name": name}
        raise InvalidInput(why, fields={"name": why}) from None
    return row


def template_delete(*, template: JobTemplate) -> None:
    template.delete()


def template_fill(template: JobTemplate, values: Any) -> dict[str, str]:
    """The parameters' values as the job's environment (NAME: text). InvalidInput (field `parameters`) naming the
    parameter that is unknown, missing or does not fit its declaration."""

    def refuse(sentence: str):
        raise InvalidInput(sentence, fields={"parameters": sentence})

    values = {} if values in (None, "") else values
    if not isinstance(values, dict):
        refuse(_('Parameters are an object of NAME: value, e.g. {"EPOCHS": 3}.'))
    declared = {d["name"]: d for d in template.parameters}
    unknown = sorted(set(values) - set(declared), key=str)
    if unknown:
        refuse(
            _("The template “%(template)s” has no parameter %(name)s; it has: %(known)s.")
            % {"template": template.name, "name": unknown[0], "known": ", ".join(declared) or _("none")}
        )
    env = {}
    for name, declaration in declared.items():
        if values.get(name) in (None, ""):
            if "default" not in declaration:
                refuse(
                    _("The parameter %(name)s (%(label)s) is required.") % {"name": name, "label": declaration["label"]}
                )
            value = declaration["default"]
        else:
            value, why = parameter_value(declaration, values[name])
            if why:
                refuse(
                    _("The parameter %(name)s (%(label)s) must be %(why)s")
                    % {"name": name, "label": declaration["label"], "why": why}
                )
        env[name] = str(value)  # a float as Python writes it back exactly (0.05, 1e-05), never rounded
    return env


def template_request(*, template: JobTemplate, parameters: Any, fields: dict[str, Any]) -> dict[str, Any]:
    """The submission's fields with the template's program, image and sizes and the parameters' values in place.

    What the template decides may not be given too (InvalidInput naming it); `env` may add variables but not set a
    parameter's."""
    given = [f for f in TEMPLATE_FIELDS if fields.get(f) not in (None, "", [], {})]
    if given:
        why = _("%(fields)s come from the template; leave them out.") % {"fields": ", ".join(given)}
        raise InvalidInput(why, fields={f: why for f in given})
    env_values = template_fill(template, parameters)
    extra = fields.get("env") or {}
    if isinstance(extra, dict) and (clash := sorted(set(extra) & set(env_values))):
        why = _("%(name)s is a parameter of the template: give it in parameters.") % {"name": clash[0]}
        raise InvalidInput(why, fields={"env": why})
    command = [_substitute(arg, env_values) for arg in template.command]
    return {
        **fields,
        "name": (fields.get("name") or "").strip() or template.name,
        "image": template.image,
        "command": command or None,
        "script": template.script or None,
        "gpus": template.gpus_per_node,
        "nodes": template.nodes,
        "max_runtime_s": template.max_runtime_s,
        "course": template.course.code,
        "env": {**(extra if isinstance(extra, dict) else {}), **env_values},
    }


def _substitute(arg: str, values: dict[str, str]) -> str:
    """`{NAME}` in one argument replaced by the parameter's text: the argument stays one argument (no shell)."""
    for name, value in values.items():
        arg = arg.replace("{" + name + "}", value)
    return arg


__all__ = [
    "check_declarations",
    "parameter_value",
    "template_delete",
    "template_fill",
    "template_request",
    "template_save",
]
