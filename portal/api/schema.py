"""What the generated OpenAPI schema says besides the views' own answers: errors, links, no NUL in text.

drf-spectacular documents each view's success; every operation can also answer the contract's errors (a JSON
`{detail, code}`: 400 malformed or invalid, 401 without credentials, 403 not permitted, 404 not visible, 429
too many), and a client (or the fuzzer, tests/test_api_fuzz.py) follows links from what it made to the
operations on it; no text anywhere takes a NUL character. A postprocessing hook (SPECTACULAR_SETTINGS) adds them.
"""

from __future__ import annotations

ERROR = {
    "type": "object",
    "description": "API.md: a sentence, a stable code, and for a 400 the fields at fault.",
    "properties": {
        "detail": {"type": "string"},
        "code": {"type": "string"},
        "fields": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    },
    "required": ["detail", "code"],
}
ERRORS = {
    "400": "Malformed (parse_error) or invalid input (invalid, with the fields).",
    "401": "Without credentials, or with wrong ones.",
    "403": "The role may not do this (permission_denied), or over a limit (quota_exceeded).",
    "404": "No such thing, or not one the caller may see.",
    "429": "Too many of these in a short time; Retry-After says when to try again.",
}
ERRORS_OF_WRITES = {"409": "It collides with the state of the lab (conflict)."}

# (operationId of what makes a thing, its status, the id's field) -> operations on the thing and their parameter
LINKS = {
    ("jobs_create", "201", "id"): {
        "job_id": ["jobs_retrieve", "jobs_cancel_create", "jobs_logs_retrieve"],
    },
    ("notebooks_create", "202", "id"): {
        "notebook_id": ["notebooks_retrieve", "notebooks_destroy", "notebooks_extend_create"],
    },
    ("budgets_create", "201", "id"): {
        "budget_id": ["budgets_retrieve", "budgets_partial_update", "budgets_destroy"],
    },
    ("reservations_create", "201", "id"): {
        "reservation_id": [
            "reservations_retrieve",
            "reservations_destroy",
            "reservations_approve_create",
            "reservations_reject_create",
        ],
    },
}


NO_NUL = "^[^\\x00]*$"  # portal.api.parsers and the middleware refuse NUL characters in any text


def _text_without_nul(node) -> None:
    """Every free-text string of a request (no format, enum or pattern of its own) says it takes no NUL."""
    if isinstance(node, list):
        for item in node:
            _text_without_nul(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and not {"format", "enum", "pattern"} & set(node):
        node["pattern"] = NO_NUL
    for value in node.values():
        _text_without_nul(value)


def _error_response(description: str) -> dict:
    body = {"schema": {"$ref": "#/components/schemas/Error"}}
    return {"description": description, "content": {"application/json": body}}


def document_errors_and_links(result, generator, request, public):
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    for name, component in schemas.items():
        if name.endswith("Request"):  # COMPONENT_SPLIT_REQUEST: what clients send
            _text_without_nul(component)
    schemas["Error"] = ERROR
    operations = {}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            operations[operation["operationId"]] = operation
            _text_without_nul(operation.get("parameters", []))
            responses = operation.setdefault("responses", {})
            errors = {**ERRORS, **(ERRORS_OF_WRITES if method in ("post", "put", "patch", "delete") else {})}
            for status, description in errors.items():
                responses.setdefault(status, _error_response(description))
    for (maker, status, field), targets in LINKS.items():
        response = operations.get(maker, {}).get("responses", {}).get(status)
        if response is None:
            continue
        links = response.setdefault("links", {})
        for parameter, target_ids in targets.items():
            for target in target_ids:
                if target in operations:
                    links[target] = {"operationId": target, "parameters": {parameter: f"$response.body#/{field}"}}
    return result
