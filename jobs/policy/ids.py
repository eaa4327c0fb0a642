"""The ids the policy carries: whatever the caller names jobs and reservations with (database ids, trace names)."""

JobId = int | str
ReservationId = int | str
