"""The API's one JSON parser: DRF's, refusing what no field of the API takes before any view sees it.

Each of these reached a view as a 500 before: JSON nested so deep that reading it (or any code walking it)
runs out of stack; NUL characters, which PostgreSQL cannot store in text; lone surrogates, which cannot be
written back as UTF-8; numbers too big for a float. They are a 400 `parse_error` naming where they are.
"""

from __future__ import annotations

import math

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 32  # the deepest the API's bodies go is 3 (a job's env, a push's samples); leave room for scripts


def _where(path: str) -> str:
    if len(path) > 80:
        path = path[:77] + "..."
    return f" at {path}" if path else ""


def json_problem(data) -> str | None:
    """What no field of the API accepts in parsed JSON, as a sentence; None when there is nothing.

    Walks the data with a stack of its own, so that the walk itself cannot run out of Python's."""
    stack = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                return f"The JSON is nested more than {MAX_DEPTH} levels deep{_where(path)}; no field needs that."
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    if problem := _text_problem(key, f"the key {path + '.' if path else ''}{key!r}"):
                        return problem
                    stack.append((item, f"{path}.{key}" if path else key, depth + 1))
                else:
                    stack.append((item, f"{path}[{key}]", depth + 1))
        elif isinstance(value, str):
            if problem := _text_problem(value, path):
                return problem
        elif isinstance(value, float) and not math.isfinite(value):
            return f"The number{_where(path)} is too large."
    return None


def _text_problem(text: str, path: str) -> str | None:
    if "\x00" in text:
        return f"The JSON holds a NUL character (\\u0000){_where(path)}; text may not contain NUL characters."
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"The JSON holds a lone surrogate (\\ud800-\\udfff){_where(path)}, which is not text; send UTF-8."
    return None


class SafeJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError(f"The JSON is nested more than {MAX_DEPTH} levels deep; no field needs that.") from None
        if problem := json_problem(data):
            raise ParseError(problem)
        return data
