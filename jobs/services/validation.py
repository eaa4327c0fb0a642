"""The checks a job request must pass before anything is written: every field, then who may use what.

Field errors are collected and raised together (InvalidInput names every bad field, each with a sentence a
student can act on); a reservation that is not the person's is refused (NotPermitted). Quotas are submit's
(services/submit.py), counted with the person's row locked.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.errors import InvalidInput, NotPermitted
from accounts.models import Course, User
from accounts.selectors import courses_active_for, role_of
from jobs.backends.base import ENV_NAME, RESERVED_ENV
from jobs.backends.resources import parse_storage_limits
from jobs.backends.rules import env_reader, is_quantity, parse_quantity
from jobs.datasets import datasets_usable_by
from jobs.models import PriorityClass
from labs.images import image_problem
from labs.models import Reservation
from labs.reservations.selectors import may_use_reservation, not_yours
from labs.selectors import ready_gpu_tops

MAX_ARGS = 256
MAX_ARG_LEN = 4096
MAX_ENV = 64
MAX_ENV_VALUE = 4096
MAX_DATASETS = 16
SHELL_HINT = gettext_lazy(
    'Give the command as a list of arguments (argv), e.g. ["python", "train.py", "--epochs", "3"].'
)
# Who reads the variables a job may not set (jobs.backends.rules.env_reader), as the refusal names them.
ENV_READERS = {
    "loader": gettext_lazy("the system's program loader"),
    "libc": gettext_lazy("the C library"),
    "python": gettext_lazy("Python when it starts"),
}


@dataclasses.dataclass(frozen=True)
class JobRequest:
    """A request that passed every field check: what job_submit writes and preview asks the policy about."""

    name: str
    image: str
    command: tuple[str, ...]
    script: str
    env: dict[str, str]
    gpu_share: float
    scratch: str
    bulk: str
    gpus_per_node: int
    nodes: int
    max_runtime_s: int
    priority: str
    reservation: Reservation | None
    course: Course | None
    datasets: tuple[str, ...]
    idle_ok_reason: str = ""

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _duration(seconds: int) -> str:
    if seconds % 86400 == 0:
        return f"{seconds // 86400} d"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def _check_command(command: Any, errors: dict[str, str]) -> tuple[str, ...]:
    if isinstance(command, str):
        errors["command"] = _("A shell string is not run. %(hint)s") % {"hint": SHELL_HINT}
        return ()
    if not isinstance(command, list | tuple) or not command:
        errors["command"] = _("Required: a command (argv) or a script. %(hint)s") % {"hint": SHELL_HINT}
        return ()
    if len(command) > MAX_ARGS:
        errors["command"] = _("At most %(n)d arguments.") % {"n": MAX_ARGS}
    elif not all(isinstance(arg, str) for arg in command):
        errors["command"] = _("Every argument must be a string. %(hint)s") % {"hint": SHELL_HINT}
    elif not command[0].strip():
        errors["command"] = _("The first argument (the program) may not be empty.")
    elif any(len(arg) > MAX_ARG_LEN or "\x00" in arg for arg in command):
        errors["command"] = _("Arguments are at most %(n)d characters, without NUL bytes.") % {"n": MAX_ARG_LEN}
    else:
        return tuple(command)
    return ()


def _check_script(script: Any, errors: dict[str, str]) -> str:
    if not isinstance(script, str) or not script.strip():
        errors["script"] = _("Required: the script's lines, run by the image's /bin/sh.")
    elif "\x00" in script:
        errors["script"] = _("A script may not hold NUL bytes.")
    elif len(script.encode()) > settings.JOBS_SCRIPT_MAX_BYTES:
        errors["script"] = _("A script is at most %(most)d bytes; this one has %(has)d. Put the rest in a file.") % {
            "most": settings.JOBS_SCRIPT_MAX_BYTES,
            "has": len(script.encode()),
        }
    else:
        return script.replace("\r\n", "\n")
    return ""


def _check_program(command: Any, script: Any, errors: dict[str, str]) -> tuple[tuple[str, ...], str]:
    """Exactly one of command (argv) and script (text): (argv, "") or ((), script)."""
    has_command = command not in (None, "", [], ())
    has_script = script not in (None, "")
    if has_command and has_script:
        errors["command"] = errors["script"] = _("Give a command or a script, not both.")
        return (), ""
    if has_script:
        return (), _check_script(script, errors)
    return _check_command(command, errors), ""


def _check_env(env: Any, errors: dict[str, str]) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        errors["env"] = _('An object of variable names to string values, e.g. {"EPOCHS": "3"}.')
        return {}
    if len(env) > MAX_ENV:
        errors["env"] = _("At most %(n)d variables.") % {"n": MAX_ENV}
        return {}
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            errors["env"] = _(
                "%(name)r is not a valid variable name (letters, digits and _, not starting with a digit)."
            ) % {"name": name}
        elif name in RESERVED_ENV or name.startswith("DATASET_"):
            errors["env"] = _("%(name)s is set by the portal and may not be overridden.") % {"name": name}
        elif (reader := env_reader(name)) is not None:
            errors["env"] = _(
                "%(name)s is read by %(reader)s and may not be set by a job; set it in the job's own script if "
                "the program needs it."
            ) % {"name": name, "reader": ENV_READERS[reader]}
        elif not isinstance(value, str):
            errors["env"] = _("The value of %(name)s must be a string.") % {"name": name}
        elif len(value) > MAX_ENV_VALUE or "\x00" in value:
            errors["env"] = _("The value of %(name)s is too long or holds a NUL byte.") % {"name": name}
        else:
            continue
        return {}
    return dict(env)


def _check_sizes(gpus: Any, nodes: Any, errors: dict[str, str]) -> tuple[int, int]:
    gpus_n, nodes_n = _int(gpus), _int(1 if nodes is None else nodes)
    tops = ready_gpu_tops()  # how many ready nodes, and the most GPUs on one
    most_per_node = max(tops) + 1 if tops else 0
    if gpus_n is None or gpus_n < 1:
        errors["gpus"] = _("At least 1 GPU (a whole number).")
    elif gpus_n > max(most_per_node, 1):
        errors["gpus"] = _("No node has %(n)s GPUs; the most on one node is %(most)s. Use more nodes.") % {
            "n": gpus_n,
            "most": most_per_node,
        }
    node_count = len(tops)
    if nodes_n is None or nodes_n < 1:
        errors["nodes"] = _("At least 1 node (a whole number).")
    elif nodes_n > max(node_count, 1):
        errors["nodes"] = _("The lab has %(n)s ready nodes; you asked for %(asked)s.") % {
            "n": node_count,
            "asked": nodes_n,
        }
    return gpus_n or 0, nodes_n or 0


def _check_reservation(
    reservation_id: Any, user: User, max_runtime_s: int, now: dt.datetime, errors: dict[str, str]
) -> Reservation | None:
    if reservation_id in (None, ""):
        return None
    number = _int(reservation_id)
    reservation = Reservation.objects.filter(pk=number).first() if number is not None else None
    if reservation is None:
        errors["reservation"] = _("No such reservation.")
        return None
    if not may_use_reservation(reservation, user, at=now):
        raise NotPermitted(not_yours(reservation), fields={"reservation": [not_yours(reservation)]})
    if not reservation.open_for_work(now):
        errors["reservation"] = _("Reservation %(id)s is %(status)s, not open for jobs.") % {
            "id": reservation.pk,
            "status": reservation.status_at(now),
        }
    elif max_runtime_s and max(reservation.starts_at, now) + dt.timedelta(seconds=max_runtime_s) > reservation.ends_at:
        left = int((reservation.ends_at - max(reservation.starts_at, now)).total_seconds())
        errors["max_runtime_s"] = _("It must fit inside reservation %(id)s, which leaves %(left)s.") % {
            "id": reservation.pk,
            "left": _duration(max(left, 0)),
        }
    return reservation


GPU_SHARES = (0.25, 0.5)


def _check_share(share: Any, gpus: int, nodes: int, errors: dict[str, str]) -> float:
    if share in (None, "", 1, 1.0, "1"):
        return 1.0
    try:
        value = float(share)
    except (TypeError, ValueError):
        value = -1.0
    if isinstance(share, bool) or not 0 < value <= 1:
        errors["gpu_share"] = _("A part of one GPU above 0 and at most 1, e.g. 0.25 or 0.5.")
    elif settings.JOBS_GPU_SHARING == "none":
        errors["gpu_share"] = _("This lab does not share GPUs between jobs: ask for whole GPUs (gpu_share 1).")
    elif value < 1 and (gpus != 1 or nodes != 1):
        errors["gpu_share"] = _("A part of a GPU is for one GPU on one node: ask for 1 GPU and 1 node.")
    else:
        return value
    return 1.0


def _check_storage(user: User, tier: str, size: Any, errors: dict[str, str]) -> str:
    if size in (None, ""):
        return ""
    ceiling = parse_storage_limits(settings.JOBS_STORAGE_LIMITS).get(role_of(user), {}).get(tier)
    if not isinstance(size, str) or not is_quantity(size.strip()) or parse_quantity(size.strip()) <= 0:
        errors[tier] = _("A size such as 50Gi or 500Mi.")
    elif ceiling is None:
        errors[tier] = _("Your role may not ask for %(tier)s storage.") % {"tier": tier}
    elif parse_quantity(size.strip()) > parse_quantity(ceiling):
        errors[tier] = _("At most %(ceiling)s of %(tier)s storage for your role; you asked for %(size)s.") % {
            "ceiling": ceiling,
            "tier": tier,
            "size": size.strip(),
        }
    else:
        return size.strip()
    return ""


def _check_name(name: Any, errors: dict[str, str]) -> str:
    name = name.strip() if isinstance(name, str) else ""
    if not name:
        errors["name"] = _("Give the job a name.")
    elif len(name) > 120:
        errors["name"] = _("At most 120 characters.")
    return name


def _check_runtime(max_runtime_s: Any, errors: dict[str, str]) -> int:
    """The max runtime, in seconds, within JOBS_MIN_RUNTIME_S..JOBS_MAX_RUNTIME_S (0 when it is not)."""
    runtime = _int(max_runtime_s)
    low, high = settings.JOBS_MIN_RUNTIME_S, settings.JOBS_MAX_RUNTIME_S
    if runtime is None or not low <= runtime <= high:
        errors["max_runtime_s"] = _("Between %(low)s and %(high)s seconds (%(low_text)s to %(high_text)s).") % {
            "low": low,
            "high": high,
            "low_text": _duration(low),
            "high_text": _duration(high),
        }
        return 0
    return runtime


def _check_priority(priority: Any, user: User, errors: dict[str, str]) -> Any:
    """A priority class; high is for teachers and admins."""
    priority = priority or PriorityClass.NORMAL
    if priority not in PriorityClass.values:
        errors["priority"] = _("One of %(values)s.") % {"values": ", ".join(PriorityClass.values)}
    elif priority == PriorityClass.HIGH and not (user.is_teacher or user.is_lab_admin):
        errors["priority"] = _("High priority is for teachers and admins; choose normal or low.")
    return priority


def _check_datasets(datasets: Any, user: User, errors: dict[str, str]) -> tuple[str, ...]:
    """The names of enabled datasets this person may use (jobs.datasets), each once, at most MAX_DATASETS."""
    if datasets in (None, ""):
        return ()
    if not isinstance(datasets, list | tuple) or not all(isinstance(d, str) for d in datasets):
        errors["datasets"] = _("A list of dataset names.")
        return ()
    if len(datasets) > MAX_DATASETS:
        errors["datasets"] = _("At most %(n)d datasets.") % {"n": MAX_DATASETS}
        return ()
    names = tuple(dict.fromkeys(datasets))
    if not names:  # an empty list: nothing to look up
        return ()
    known = set(datasets_usable_by(user).filter(name__in=names).values_list("name", flat=True))
    unknown = [d for d in names if d not in known]
    if unknown:
        errors["datasets"] = _("Unknown datasets: %(names)s.") % {"names": ", ".join(unknown)}
    return names


def _check_course(course: Any, user: User, chosen: Reservation | None, errors: dict[str, str]) -> Course | None:
    """The course the job counts for: one of the person's in term (an admin may name any), else the reservation's."""
    if course in (None, ""):
        return chosen.course if chosen is not None and chosen.course_id else None
    course_row = courses_active_for(user).filter(code=course).first() if isinstance(course, str) else None
    if course_row is None and not user.is_lab_admin:
        errors["course"] = _("Not a course of yours that is in term.")
    elif course_row is None:
        course_row = Course.objects.filter(code=course).first() if isinstance(course, str) else None
        if course_row is None:
            errors["course"] = _("No such course.")
    return course_row


def validate_request(
    *,
    user: User,
    name: Any,
    image: Any,
    gpus: Any,
    max_runtime_s: Any,
    command: Any = None,
    script: Any = None,
    nodes: Any = 1,
    priority: Any = None,
    reservation: Any = None,
    env: Any = None,
    datasets: Any = None,
    course: Any = None,
    gpu_share: Any = None,
    scratch: Any = None,
    bulk: Any = None,
    idle_ok_reason: Any = None,
    now: dt.datetime | None = None,
) -> JobRequest:
    """Check a request's fields (InvalidInput naming each bad one) and who may use what (NotPermitted)."""
    now = now or timezone.now()
    errors: dict[str, str] = {}
    name = _check_name(name, errors)
    image = image.strip() if isinstance(image, str) else ""
    if image_why := image_problem(image):
        errors["image"] = image_why
    argv, script_text = _check_program(command, script, errors)
    variables = _check_env(env, errors)
    gpus_n, nodes_n = _check_sizes(gpus, nodes, errors)
    share = _check_share(gpu_share, gpus_n, nodes_n, errors)
    tiers = {tier: _check_storage(user, tier, size, errors) for tier, size in (("scratch", scratch), ("bulk", bulk))}
    runtime = _check_runtime(max_runtime_s, errors)
    priority = _check_priority(priority, user, errors)
    chosen = _check_reservation(reservation, user, runtime, now, errors)
    names = _check_datasets(datasets, user, errors)
    course_row = _check_course(course, user, chosen, errors)
    idle_ok = idle_ok_reason.strip() if isinstance(idle_ok_reason, str) else ""
    if idle_ok_reason not in (None, "") and not (isinstance(idle_ok_reason, str) and len(idle_ok) <= 300):
        errors["idle_ok_reason"] = "A sentence of at most 300 characters."
    if errors:
        listed = ", ".join(sorted(errors))
        sentences = " ".join(str(errors[k]) for k in sorted(errors))
        raise InvalidInput(
            _("Please correct %(fields)s: %(problems)s") % {"fields": listed, "problems": sentences}, fields=errors
        )
    return JobRequest(
        name=name,
        image=image,
        command=argv,
        script=script_text,
        env=variables,
        gpu_share=share,
        scratch=tiers["scratch"],
        bulk=tiers["bulk"],
        gpus_per_node=gpus_n,
        nodes=nodes_n,
        max_runtime_s=runtime,
        priority=priority,
        reservation=chosen,
        course=course_row,
        datasets=names,
        idle_ok_reason=idle_ok,
    )


__all__ = ["JobRequest", "validate_request"]
