"""Dates and numbers in English (FORMAT_MODULE_PATH, portal/settings/locale.py). The kinds of accounts/timefmt.py
read DATE_FORMAT, TIME_FORMAT and DATETIME_FORMAT: one format each, on pages, e-mails and CSV files alike."""

DATE_FORMAT = "Y-m-d"  # 2026-11-27: unambiguous for an international lab, sorts as text
TIME_FORMAT = "H:i"  # 14:05 (24-hour: the lab's schedule, never "2:05 PM")
DATETIME_FORMAT = "Y-m-d H:i"  # 2026-11-27 14:05
SHORT_DATE_FORMAT = DATE_FORMAT
SHORT_DATETIME_FORMAT = DATETIME_FORMAT
MONTH_YEAR_FORMAT = "F Y"
DATE_INPUT_FORMATS = ["%Y-%m-%d", "%d/%m/%Y"]
TIME_INPUT_FORMATS = ["%H:%M", "%H:%M:%S"]
DATETIME_INPUT_FORMATS = ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S"]
FIRST_DAY_OF_WEEK = 1  # Monday: the lab's week (quotas reset on Monday)
DECIMAL_SEPARATOR = "."
THOUSAND_SEPARATOR = ","
NUMBER_GROUPING = 3
