"""CSV answers that stream: a header row, then pages of rows as the database gives them, in constant memory. Every
cell goes through accounts.csvsafe (text that a spreadsheet would run as a formula gets a `'` in front); what
PostgreSQL writes itself (`raw`, COPY) was escaped in its SQL (labs.usage.accounting.entries_copy).

Under ASGI (the portal's server) Django buffers a synchronous iterator whole before sending it, so there the rows
come from an asynchronous iterator that fetches each page in the database's thread; under WSGI (and Django's test
client) a plain generator streams.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse

from accounts.csvsafe import SafeWriter


def cell(value) -> object:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if value is None:
        return ""
    return value


def _encode(rows: Iterable[Iterable]) -> bytes:
    buffer = io.StringIO()
    writer = SafeWriter(buffer, lineterminator="\r\n")
    for row in rows:
        writer.writerow([cell(value) for value in row])
    return buffer.getvalue().encode()


def csv_chunks(header: Iterable[str], pages: Iterator[list] | None, raw: Iterator[bytes] | None = None):
    yield _encode([header])
    if raw is not None:
        yield from raw
        return
    for page in pages:
        yield _encode(page)


async def _acsv_chunks(header: Iterable[str], pages: Iterator[list] | None, raw: Iterator[bytes] | None = None):
    yield _encode([header])
    source = raw if raw is not None else (_encode(page) for page in pages)
    fetch: Callable = sync_to_async(lambda: next(source, None), thread_sensitive=True)
    while (chunk := await fetch()) is not None:
        yield chunk


def csv_response(
    request: HttpRequest,
    *,
    filename: str,
    header: Iterable[str],
    pages: Iterator[list] | None = None,
    raw: Iterator[bytes] | None = None,
):
    """`pages` of rows to write here, or `raw` CSV bytes written by the database (no header: it comes first)."""
    header = list(header)
    streams = _acsv_chunks if isinstance(request, ASGIRequest) else csv_chunks
    content = streams(header, pages, raw)
    response = StreamingHttpResponse(content, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response["Cache-Control"] = "no-store"
    return response


def one_page(rows: list) -> Iterator[list]:
    yield rows
