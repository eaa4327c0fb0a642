"""The rules a budget keeps, written once: the model's clean() (admin console) and the services (API) ask here.

Plain values in, {field: sentence} out; nothing here touches the database, so the models can import it.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

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
        raise ValueError("Give percentages separated by commas, e.g. 50,80,100.")
    values = []
    for part in parts:
        if not (part.isascii() and part.isdigit()):  # "²" and "٣" are digits to Python, not to int()
            raise ValueError(f"“{part[:20]}” is not a whole percentage; use e.g. 50,80,100.")
        value = int(part)
        if not 1 <= value <= MAX_THRESHOLD_PCT:
            raise ValueError(f"Each percentage must be between 1 and {MAX_THRESHOLD_PCT}; {value} is not.")
        values.append(value)
    if len(values) > MAX_THRESHOLDS:
        raise ValueError(f"At most {MAX_THRESHOLDS} alert thresholds.")
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
        problems["course"] = "A budget is for one course or for one person: choose exactly one of them."
    hours = _decimal(getattr(budget, "gpu_hours", None))
    if hours is None:
        problems["gpu_hours"] = "Give the GPU-hours of the budget."
    elif not hours.is_finite() or hours <= 0:
        problems["gpu_hours"] = "The GPU-hours must be a number above 0."
    elif hours > MAX_BUDGET_GPU_HOURS:
        problems["gpu_hours"] = f"At most {MAX_BUDGET_GPU_HOURS:,} GPU-hours: the whole lab uses far less in a year."
    for field, ceiling in (("price_per_gpu_hour", MAX_PRICE_PER_GPU_HOUR), ("price_per_kwh", MAX_PRICE_PER_KWH)):
        price = _decimal(getattr(budget, field, None))
        if price is not None and (not price.is_finite() or price < 0):
            problems[field] = "A price cannot be negative; leave it blank for no price."
        elif price is not None and price > ceiling:
            problems[field] = f"At most {ceiling} per unit: check the decimal point."
    starts_on, ends_on = getattr(budget, "starts_on", None), getattr(budget, "ends_on", None)
    period = getattr(budget, "period", "")
    if not isinstance(starts_on, dt.date):
        problems["starts_on"] = "Give the first day the budget counts."
    elif ends_on is not None and ends_on < starts_on:
        problems["ends_on"] = "The budget cannot end before it starts."
    elif period == "term" and ends_on is None:
        problems["ends_on"] = "A term budget needs its last day (a course budget takes the course's term)."
    elif period == "term" and (ends_on - starts_on).days > MAX_PERIOD_DAYS:
        problems["ends_on"] = "A term budget spans at most two years."
    if period not in ("term", "month"):
        problems["period"] = "The period is term or month."
    if getattr(budget, "on_exceed", "") not in ("warn", "block"):
        problems["on_exceed"] = "At 100 % the budget either warns or blocks."
    thresholds = getattr(budget, "thresholds", "") or ""
    if thresholds:
        try:
            parse_thresholds(thresholds)
        except ValueError as exc:
            problems["thresholds"] = str(exc)
    if not (getattr(budget, "name", "") or "").strip():
        problems["name"] = "Give the budget a name: alerts and refusals name it."
    return problems
