"""CSV a spreadsheet opens as data: the one rule every CSV export of the portal writes its cells by.

A spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` as a formula (`=HYPERLINK("http://x", "Open")`,
or worse), and one that starts with a tab or carriage return after trimming it. Free text from people (reservation
titles, names, usernames, e-mail addresses, refs) reaches the exports, so such a text cell is written with a `'`
in front (OWASP's rule for CSV injection): spreadsheets show the text and never run it. Only text is escaped: numbers
(a negative number included) stay numbers, so sums and charts still work; times and empty cells are text that never
starts with those characters. Importers of the portal's own files (rosters) take the `'` off again (`unescape`).

`safe_text` is the same rule as a database expression, for the exports PostgreSQL writes itself (COPY ... TO STDOUT,
labs/usage).
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
QUOTE = "'"


def safe_cell(value: Any) -> Any:
    """The value as a spreadsheet-safe cell: text that starts like a formula gets a `'` in front; others as given."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return QUOTE + value
    return value


def safe_row(row: Iterable[Any]) -> list[Any]:
    return [safe_cell(value) for value in row]


def unescape(text: str) -> str:
    """A cell read back from one of the portal's exports: without the `'` that `safe_cell` put in front."""
    if text.startswith(QUOTE) and text[1:].startswith(FORMULA_STARTS):
        return text[1:]
    return text


class SafeWriter:
    """csv.writer that writes every cell through safe_cell: the writer each export uses."""

    def __init__(self, out, **kwargs) -> None:
        self._writer = csv.writer(out, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._writer.writerow(safe_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def safe_text(field: str):
    """The same rule as a PostgreSQL expression of the text column `field`, for the exports the database writes
    itself (COPY ... TO STDOUT, labs/usage): a `'` in front when the text starts like a formula; NULL stays NULL.

    The first character is compared by its code (ascii(), integers), not as text under the database's collation:
    the export writes hundreds of thousands of rows a second, and a collated comparison per cell costs a fifth."""
    from django.db.models import CharField, F, Func

    class SafeText(Func):
        codes = ", ".join(str(ord(start)) for start in FORMULA_STARTS)
        template = (
            f"(CASE WHEN ascii(%(expressions)s) IN ({codes}) THEN '{QUOTE}{QUOTE}' || %(expressions)s "
            "ELSE %(expressions)s END)"
        )
        output_field = CharField()

        def as_sql(self, compiler, connection, **extra):
            sql, params = super().as_sql(compiler, connection, **extra)
            if params:  # the template repeats the column: a column has no parameters to repeat
                raise ValueError("safe_text takes a column, not an expression with parameters")
            return sql, params

    return SafeText(F(field))
