"""The Kubernetes rules the OpenAPI schemas do not carry: names, label keys and values, quantities; and the
environment variables a job may not set.

The API server enforces the first (a 422 Invalid); checking before sending turns a bad manifest into a clear,
non-retryable error, and lets the tests check every manifest the backend builds.

The second is the one list of variables that the program loader, the C library or a Python launcher read at start
(`env_reader`): the API and the web form refuse them (jobs/services/validation.py) and the sandbox keeps them out of
every process that runs with rights (jobs/backends/sandbox.py). Standard library only: the job runner and the hub
load this file without Django.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
PORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# k8s.io/apimachinery resource.Quantity: a signed decimal number, then a binary or decimal SI suffix or an exponent.
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

# Who reads a variable before the job's own code runs: "loader" (ld.so), "libc" (glibc's list of variables it
# ignores in setuid programs, sysdeps/generic/unsecvars.h, and its allocator's), "python" (the interpreter at start).
# Names are case-sensitive on Linux: ld.so reads LD_PRELOAD and nothing else, so ld_preload is an ordinary name.
ENV_READ_BY_LIBC = frozenset(
    {
        "GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "NIS_PATH", "NLSPATH",
        "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR",
    }
)  # fmt: skip
ENV_PREFIXES = (("LD_", "loader"), ("MALLOC_", "libc"), ("GLIBC_", "libc"), ("PYTHON", "python"))
# Python variables that only change how a program prints, hashes or buffers: they load no code from anywhere.
ENV_PYTHON_HARMLESS = frozenset(
    {"PYTHONUNBUFFERED", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8",
     "PYTHONFAULTHANDLER"}
)  # fmt: skip
ENV_READERS = {
    "loader": "the system's program loader",
    "libc": "the C library",
    "python": "Python when it starts",
}


def env_reader(name: str) -> str | None:
    """Who reads `name` at a program's start ("loader", "libc", "python"), or None for a name a job may set."""
    if name in ENV_READ_BY_LIBC:
        return "libc"
    if name in ENV_PYTHON_HARMLESS:
        return None
    for prefix, reader in ENV_PREFIXES:
        if name.startswith(prefix):
            return reader
    return None


def env_refusal(name: str) -> str | None:
    """Why a job may not set `name` (an English sentence for logs; the API's own is translated), or None."""
    reader = env_reader(name)
    if reader is None:
        return None
    return f"{name} is read by {ENV_READERS[reader]} and may not be set by a job."


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and bool(DNS1123_LABEL.match(value))


def is_dns1123_subdomain(value: str) -> bool:
    return 0 < len(value) <= 253 and all(is_dns1123_label(part) for part in value.split("."))


def is_dns1035_label(value: str) -> bool:
    return len(value) <= 63 and bool(DNS1035_LABEL.match(value))


def is_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if "/" in key and not is_dns1123_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and bool(LABEL_NAME.match(name))


def is_label_value(value: str) -> bool:
    return value == "" or (len(value) <= 63 and bool(LABEL_NAME.match(value)))


def is_quantity(value: object) -> bool:
    return isinstance(value, str) and bool(QUANTITY.match(value))


def is_port_name(value: str) -> bool:
    return len(value) <= 15 and bool(PORT_NAME.match(value)) and "--" not in value and any(c.isalpha() for c in value)


def scale_quantity(quantity: str, factor: int | Decimal) -> str:
    """`quantity` times `factor`, keeping its suffix: ("24Gi", 2) -> "48Gi", ("24Gi", Decimal("0.25")) -> "6Gi"."""
    match = QUANTITY.match(quantity)
    if not match:
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity")
    suffix = match.group(3) or ""
    number = quantity[: len(quantity) - len(suffix)]
    try:
        scaled = Decimal(number) * factor
    except InvalidOperation:
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity") from None
    text = format(scaled.normalize(), "f") if scaled != scaled.to_integral() else str(int(scaled))
    return f"{text}{suffix}"


_SUFFIX = {
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": 1,
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
}  # fmt: skip


def parse_quantity(quantity: str) -> Decimal:
    """A quantity's value: "1Gi" -> 1073741824, "500m" -> 0.5. ValueError if it is not a quantity."""
    match = QUANTITY.match(quantity) if isinstance(quantity, str) else None
    if not match:
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity")
    suffix = match.group(3) or ""
    number = Decimal(quantity[: len(quantity) - len(suffix)])
    if suffix[:1] in ("e", "E") and suffix not in _SUFFIX:
        return number * Decimal(10) ** int(suffix[1:])
    return number * _SUFFIX[suffix]


def label_value(text: str) -> str:
    """Text made into a valid label value (a username, a course code): invalid characters become '-'."""
    value = re.sub(r"[^A-Za-z0-9_.-]", "-", text)[:63]
    return value.strip("-_.")


def _metadata_problems(meta: dict[str, Any], where: str) -> Iterator[str]:
    for key, value in (meta.get("labels") or {}).items():
        if not is_label_key(key):
            yield f"{where}: label key {key!r} is invalid"
        if not isinstance(value, str) or not is_label_value(value):
            yield f"{where}: label value {value!r} of {key} is invalid"
    for key in meta.get("annotations") or {}:
        if not is_label_key(key):
            yield f"{where}: annotation key {key!r} is invalid"


def _pod_problems(spec: dict[str, Any], where: str) -> Iterator[str]:
    for volume in spec.get("volumes") or []:
        if not is_dns1123_label(volume.get("name", "")):
            yield f"{where}: volume name {volume.get('name')!r} is not a DNS-1123 label"
        size = (volume.get("emptyDir") or {}).get("sizeLimit")
        if size is not None and not is_quantity(size):
            yield f"{where}: sizeLimit {size!r} is not a quantity"
    if spec.get("subdomain") is not None and not is_dns1123_label(spec["subdomain"]):
        yield f"{where}: subdomain {spec['subdomain']!r} is not a DNS-1123 label"
    for container in spec.get("containers") or []:
        name = container.get("name", "")
        if not is_dns1123_label(name):
            yield f"{where}: container name {name!r} is not a DNS-1123 label"
        for kind in ("limits", "requests"):
            for resource, amount in ((container.get("resources") or {}).get(kind) or {}).items():
                if not is_quantity(amount):
                    yield f"{where}: {kind} {resource}={amount!r} is not a quantity"
        for env in container.get("env") or []:
            if not ENV_NAME.match(env.get("name", "")):
                yield f"{where}: environment variable name {env.get('name')!r} is invalid"
        for port in container.get("ports") or []:
            if "name" in port and not is_port_name(port["name"]):
                yield f"{where}: port name {port['name']!r} is invalid"


def manifest_problems(manifest: dict[str, Any]) -> list[str]:
    """Break any rule of the API server's validation that the OpenAPI schema cannot express?"""
    kind = manifest.get("kind", "")
    meta = manifest.get("metadata") or {}
    name = meta.get("name", "")
    problems = []
    if kind == "Service":
        if not is_dns1035_label(name):
            problems.append(f"Service name {name!r} is not a DNS-1035 label")
    elif kind == "Job":
        # The job controller puts the name in the pods' job-name label, so it must be a label value too.
        if not is_dns1123_label(name):
            problems.append(f"Job name {name!r} is not a DNS-1123 label of at most 63 characters")
    elif not is_dns1123_subdomain(name):
        problems.append(f"{kind} name {name!r} is not a DNS-1123 subdomain")
    if meta.get("namespace") is not None and not is_dns1123_label(meta["namespace"]):
        problems.append(f"namespace {meta['namespace']!r} is not a DNS-1123 label")
    problems.extend(_metadata_problems(meta, kind))
    spec = manifest.get("spec") or {}
    if kind == "Job":
        template = spec.get("template") or {}
        problems.extend(_metadata_problems(template.get("metadata") or {}, "pod template"))
        problems.extend(_pod_problems(template.get("spec") or {}, "pod template"))
        if spec.get("completionMode") == "Indexed":
            hostname_max = len(name) + 1 + len(str(max(int(spec.get("completions", 1)) - 1, 0)))
            if hostname_max > 63:
                problems.append(f"Indexed Job {name!r}: its pods' hostnames would be longer than 63 characters")
    if kind == "Service":
        for key, value in (spec.get("selector") or {}).items():
            if not is_label_key(key) or not is_label_value(value):
                problems.append(f"Service selector {key}={value!r} is invalid")
        for port in spec.get("ports") or []:
            if "name" in port and not is_port_name(port["name"]):
                problems.append(f"Service port name {port['name']!r} is invalid")
    if kind == "PersistentVolumeClaim":
        storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        if not is_quantity(storage):
            problems.append(f"storage request {storage!r} is not a quantity")
    return problems
