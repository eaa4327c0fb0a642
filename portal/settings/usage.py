"""Usage and efficiency (labs/usage) and budgets with their alerts and weekly report (labs/budgets). Their refreshes
and checks are scheduled in workers.py; the e-mail they send goes through mail.py."""

from __future__ import annotations

from accounts.env import envbool, envint, envmonthdays, envstr
from portal.settings.locale import LAB_CURRENCY

# --- Usage and efficiency (labs/usage) --------------------------------------------------------------------------------
# A minute of a holder's GPU under this utilisation (percent) counts as idle GPU time.
USAGE_IDLE_UTIL_PCT = envint("USAGE_IDLE_UTIL_PCT", 5, minimum=0, maximum=100)
# How often beat refreshes the efficiency rows of running holders and of holders ended without one (seconds).
USAGE_EFFICIENCY_REFRESH_S = envint("USAGE_EFFICIENCY_REFRESH_S", 600, minimum=30)
# Holders ended within this many days are (re)computed by the refresh; the telemetry history must reach that far
# back plus the longest holder, so it is kept at least USAGE_EFFICIENCY_DAYS + 7 days whatever TELEMETRY_HISTORY_DAYS
# (telemetry.py).
USAGE_EFFICIENCY_DAYS = envint("USAGE_EFFICIENCY_DAYS", 2, minimum=1, maximum=60)
# The lab's terms for the `term` bucket of usage reports: the month-day each term starts, in the lab's zone, read
# as sorted (month, day) pairs.
USAGE_TERM_STARTS = envmonthdays("USAGE_TERM_STARTS", ["02-01", "08-01"])

# --- Budgets, alerts and e-mail (labs/budgets) -----------------------------------------------------------------------
# Budgets' prices and costs are in the lab's currency (LAB_CURRENCY, locale.py); the older name stays readable.
USAGE_CURRENCY = LAB_CURRENCY
# Alert at these percentages of a budget (a budget may set its own); each once per budget and period. Read by the
# budgets' own rule (labs/budgets/validation.py): a list it refuses stops the start (labs.E004, labs/budgets/checks.py).
BUDGET_ALERT_THRESHOLDS = envstr("BUDGET_ALERT_THRESHOLDS", "50,80,100")
BUDGETS_CHECK_INTERVAL_S = envint("BUDGETS_CHECK_INTERVAL_S", 300, minimum=10)
BUDGETS_CHECK_ON_END = envbool("BUDGETS_CHECK_ON_END", default=True)  # also check right after work ends
# The weekly usage summary (teachers: their courses; admins: the lab) goes out from this hour on Monday (lab time);
# beat looks every USAGE_REPORT_CHECK_S whether someone is due it.
USAGE_REPORT_HOUR = envint("USAGE_REPORT_HOUR", 7, minimum=0, maximum=23)
USAGE_REPORT_CHECK_S = envint("USAGE_REPORT_CHECK_S", 3600, minimum=60)
