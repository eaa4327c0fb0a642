"""The rules a budget keeps, written once: the model's clean() (admin console) and the services (API) ask here.

Plain values in, {field: sentence} out; nothing here touches the database, so the models can import it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils.translation import gettext as _

from accounts.locale import fmt_number

# Amounts past these are typing mistakes, not budgets: 40 GPUs for a whole year are 350,400 GPU-hours.
MAX_BUDGET_GPU_HOURS = Decimal("1000000")
MAX_PRICE_PER_GPU_HOUR = Decimal("10000")
MAX_PRICE_PER_KWH = Decimal("100")
MAX_THRESHOLD_PCT = 1000
MAX_THRESHOLDS = 10
MAX_PERIOD_DAYS = 2 * 366


def parse_thresholds(text: str) -> list[int]:
    """ "50, 80,100" -> [50, 80, 100]; ValueError with a sentence when it is not a list of percentages."""
    parts = [part.strip().rstrip("%").strip() for part in (text or "").split(",") if part.strip()]
    if not parts:
        raise ValueError(_("Give percentages separated by commas, e.g. 50,80,100."))
    values = []
    for part in parts:
        if not (part.isascii() and part.isdigit()):  # "²" and "٣" are digits to Python, not to int()
            raise ValueError(_("“%(part)s” is not a whole percentage; use e.g. 50,80,100.") % {"part": part[:20]})
        value = int(part)
        if not 1 <= value <= MAX_THRESHOLD_PCT:
            raise ValueError(
                _("Each percentage must be between 1 and %(most)s; %(value)s is not.")
                % {"most": MAX_THRESHOLD_PCT, "value": value}
            )
        values.append(value)
    if len(values) > MAX_THRESHOLDS:
        raise ValueError(_("At most %(n)s alert thresholds.") % {"n": MAX_THRESHOLDS})
    return sorted(set(values))


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal("NaN")
    return number


def budget_fill_days(budget: Any, *, today: dt.date) -> None:
    """The days a budget takes when they were not given (the console and the API alike): a course's term budget its
    course's term; a monthly budget the first of this month."""
    if getattr(budget, "course_id", None) is not None and budget.period == "term":
        budget.starts_on = budget.starts_on or budget.course.term_start
        budget.ends_on = budget.ends_on or budget.course.term_end
    if budget.period == "month" and budget.starts_on is None:
        budget.starts_on = today.replace(day=1)


def budget_problems(budget: Any) -> dict[str, str]:
    """What is wrong with a budget (a model instance or anything with its attributes), field by field."""
    problems: dict[str, str] = {}
    has_course = getattr(budget, "course_id", None) is not None
    has_user = getattr(budget, "user_id", None) is not None
    if has_course == has_user:
        problems["course"] = _("A budget is for one course or for one person: choose exactly one of them.")
    hours = _decimal(getattr(budget, "gpu_hours", None))
    if hours is None:
        problems["gpu_hours"] = _("Give the GPU-hours of the budget.")
    elif not hours.is_finite() or hours <= 0:
        problems["gpu_hours"] = _("The GPU-hours must be a number above 0.")
    elif hours > MAX_BUDGET_GPU_HOURS:
        problems["gpu_hours"] = _("At most %(most)s GPU-hours: the whole lab uses far less in a year.") % {
            "most": fmt_number(MAX_BUDGET_GPU_HOURS, 0)
        }
    for field, ceiling in (("price_per_gpu_hour", MAX_PRICE_PER_GPU_HOUR), ("price_per_kwh", MAX_PRICE_PER_KWH)):
        price = _decimal(getattr(budget, field, None))
        if price is not None and (not price.is_finite() or price < 0):
            problems[field] = _("A price cannot be negative; leave it blank for no price.")
        elif price is not None and price > ceiling:
            problems[field] = _("At most %(most)s per unit: check the decimal point.") % {
                "most": fmt_number(ceiling, 0)
            }
    starts_on, ends_on = getattr(budget, "starts_on", None), getattr(budget, "ends_on", None)
    period = getattr(budget, "period", "")
    if not isinstance(starts_on, dt.date):
        problems["starts_on"] = _("Give the first day the budget counts.")
    elif ends_on is not None and ends_on < starts_on:
        problems["ends_on"] = _("The budget cannot end before it starts.")
    elif period == "term" and ends_on is None:
        problems["ends_on"] = _("A term budget needs its last day (a course budget takes the course's term).")
    elif period == "term" and (ends_on - starts_on).days > MAX_PERIOD_DAYS:
        problems["ends_on"] = _("A term budget spans at most two years.")
    if period not in ("term", "month"):
        problems["period"] = _("The period is term or month.")
    if getattr(budget, "on_exceed", "") not in ("warn", "block"):
        problems["on_exceed"] = _("At 100 % the budget either warns or blocks.")
    thresholds = getattr(budget, "thresholds", "") or ""
    if thresholds:
        try:
            parse_thresholds(thresholds)
        except ValueError as exc:
            problems["thresholds"] = str(exc)
    if not (getattr(budget, "name", "") or "").strip():
        problems["name"] = _("Give the budget a name: alerts and refusals name it.")
    return problems
