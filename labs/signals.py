"""Signals the lab sends after commit, for the parts that run work on the GPUs (notebooks, jobs).

`labs` cannot import those parts (imports point `jobs -> labs -> portal`), so it says what happened
and they act: a notebook server is stopped, a job attempt is preempted and requeued.
"""

from django.dispatch import Signal

# Sent with allocation_ids=[...] and reason="..." when the lab ended those ledger entries
# (e.g. a reservation's window began on their nodes).
allocations_ended = Signal()

# Sent after commit with user_ids=[...], course_ids=[...] (None left out) and at=... whenever the ledger closed
# entries (a notebook, job attempt or reservation ended): what reads use right after it (budget alerts) acts on it.
ledger_closed = Signal()
