"""Budgets: GPU-hours per course or person for a term or a month, their cost, alerts and the block at 100 %.

- validation.py  the rules a budget keeps (the model's clean() and the services ask the same)
- periods.py     which period of a budget is current, and its window in the lab's time zone
- selectors.py   who sees which budgets; a budget's use from the ledger, its cost (GPU-hours and telemetry energy)
- services.py    create, change, delete (admins); the guard notebooks and jobs call before they queue
- alerts.py      the check: notices and e-mail at each threshold, once per period
- report.py      the weekly usage summary by e-mail to teachers and admins
- api.py, urls.py, tasks.py, receivers.py, admin_console.py, metrics.py

Models: labs/models/budgets.py (Budget, BudgetAlert, UsageReportSent).
"""
