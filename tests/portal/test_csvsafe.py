"""accounts.csvsafe: the one rule every CSV export writes its cells by (OWASP's CSV injection rule), in Python and
SQL."""

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest

from accounts.csvsafe import FORMULA_STARTS, SafeWriter, safe_cell, safe_row, safe_text, unescape


@pytest.mark.parametrize(
    "value,written",
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("a=b", "a=b"),
        ("", ""),
        ("'already", "'already"),
        (-5, -5),  # numbers stay numbers, negative ones too
        (-1.5, -1.5),
        (Decimal("-0.25"), Decimal("-0.25")),
        (None, None),
    ],
)
def test_text_that_starts_like_a_formula_gets_a_quote_and_numbers_stay(value, written):
    assert safe_cell(value) == written
    if isinstance(written, str):
        assert unescape(written) == value


def test_the_writer_escapes_every_cell_of_every_row():
    out = io.StringIO()
    writer = SafeWriter(out, lineterminator="\n")
    writer.writerow(["=1+1", -3, "ok"])
    writer.writerows([["@x", 2.5], ["-", None]])
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [["'=1+1", "-3", "ok"], ["'@x", "2.5"], ["'-", ""]]
    assert safe_row([dt.date(2026, 3, 9), "+"]) == [dt.date(2026, 3, 9), "'+"]


@pytest.mark.django_db
@pytest.mark.postgresql_only  # the COPY export's expression: PostgreSQL's ascii()
def test_the_database_applies_the_same_rule():
    from accounts.models import User

    samples = [*(start + "x" for start in FORMULA_STARTS), "plain", "", "'=x"]
    for n, text in enumerate(samples):
        User.objects.create(username=f"u{n}", first_name=text)
    rows = dict(User.objects.values_list("first_name", safe_text("first_name")))
    assert rows == {text: safe_cell(text) for text in samples}
