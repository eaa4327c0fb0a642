"""Signals the lab sends after commit, for the parts that run work on the GPUs (notebooks, jobs).

`labs` cannot import those parts (imports point `jobs -> labs -> portal`), so it says what happened
and they act: a notebook server is stopped, a job attempt is preempted and requeued.
"""

from django.dispatch import Signal

# Sent with allocation_ids=[...] and reason="..." when the lab ended those ledger entries
# (e.g. a reservation's window began on their nodes).
allocations_ended = Signal()

# Sent after commit whenever the ledger closed entries (a job attempt or notebook session ended, a reservation's
# window closed), with refs=[Ref, ...] (labs.ledger.Ref: the holders), user_ids=[...], course_ids=[...] (None left
# out) and at=datetime. What reads right after it acts on it: usage computes the holders' efficiency rows, budgets
# check their people's and courses' alerts.
holders_closed = Signal()
