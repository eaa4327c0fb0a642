"""The lab's models, one module per topic, all of the one app `labs` (tables and migrations are the app's).

- nodes.py         Node, Gpu and the node statuses: the inventory
- ledger.py        Allocation and its kinds: who holds which GPU when
- reservations.py  Reservation, ReservationNode, their statuses, HOLDING_STATUSES and WORKING_STATUSES
- notebooks.py     NotebookProfile, NotebookSession, their statuses and the NOTEBOOK_* groups of them
- telemetry.py     GpuMinute, NodeAgentToken, GpuAlert and its kinds
- budgets.py       Budget, BudgetAlert, UsageReportSent: GPU-hour budgets, the alerts told, the weekly reports sent
- coursework.py   Handout (material, assignments), Extension, Submission: course work handed out and collected
- usage.py         HolderEfficiency: how well each job attempt and notebook session used its GPUs; UsageDay(Course):
                   the ledger's closed GPU time per lab day (partial sums for the day reports)
- maintenance.py   Maintenance (windows with nodes out of service), Announcement (banners), Severity
- ImageRule, the image allow-list's model, lives with its rule in labs/images.py and is imported here to register it.

`from labs.models import X` is the way in for every name below.
"""

from labs.images import ImageRule
from labs.models.budgets import Budget, BudgetAction, BudgetAlert, BudgetPeriod, UsageReportSent
from labs.models.coursework import Extension, Handout, HandoutKind, HandoutSource, Submission, SubmissionTrigger
from labs.models.ledger import Allocation, AllocationKind
from labs.models.maintenance import Announcement, Maintenance, Severity
from labs.models.nodes import Gpu, Node, NodeStatus, node_name_validator
from labs.models.notebooks import (
    NOTEBOOK_ACTIVE,
    NOTEBOOK_DONE,
    NOTEBOOK_LIVE,
    NotebookProfile,
    NotebookSession,
    NotebookStatus,
)
from labs.models.reservations import (
    HOLDING_STATUSES,
    WORKING_STATUSES,
    Reservation,
    ReservationNode,
    ReservationStatus,
)
from labs.models.telemetry import GpuAlert, GpuAlertKind, GpuMinute, NodeAgentToken
from labs.models.usage import HolderEfficiency, UsageDay, UsageDayCourse

__all__ = [
    "Extension",
    "Handout",
    "HandoutKind",
    "HandoutSource",
    "Submission",
    "SubmissionTrigger",
    "HOLDING_STATUSES",
    "NOTEBOOK_ACTIVE",
    "NOTEBOOK_DONE",
    "NOTEBOOK_LIVE",
    "WORKING_STATUSES",
    "Allocation",
    "Announcement",
    "AllocationKind",
    "Budget",
    "BudgetAction",
    "BudgetAlert",
    "BudgetPeriod",
    "Gpu",
    "Maintenance",
    "HolderEfficiency",
    "GpuAlert",
    "GpuAlertKind",
    "GpuMinute",
    "ImageRule",
    "Node",
    "NodeAgentToken",
    "NodeStatus",
    "NotebookProfile",
    "NotebookSession",
    "NotebookStatus",
    "Reservation",
    "ReservationNode",
    "ReservationStatus",
    "Severity",
    "UsageDay",
    "UsageDayCourse",
    "UsageReportSent",
    "node_name_validator",
]
