"""Resource presets for the job form: the usual sizes of work, only those the person's quota and the lab allow.

A preset is GPUs per node, nodes and a max runtime; its value on the form is "gpus:nodes:seconds". What a preset
would use of the week's GPU-hours is said beside it, next to what is left.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from django.utils.translation import gettext as _
from django.utils.translation import ngettext

HOUR = 3600
# (GPUs per node, nodes, max runtime): from a first try to a multi-node run.
CANDIDATES = (
    (1, 1, HOUR),
    (1, 1, 4 * HOUR),
    (1, 1, 24 * HOUR),
    (2, 1, 4 * HOUR),
    (4, 1, 8 * HOUR),
    (8, 1, 8 * HOUR),
    (4, 2, 8 * HOUR),
    (8, 2, 8 * HOUR),
)


@dataclasses.dataclass(frozen=True)
class Preset:
    gpus_per_node: int
    nodes: int
    max_runtime_s: int

    @property
    def value(self) -> str:
        return f"{self.gpus_per_node}:{self.nodes}:{self.max_runtime_s}"

    @property
    def gpu_hours(self) -> Decimal:
        return Decimal(self.gpus_per_node * self.nodes * self.max_runtime_s) / HOUR

    @property
    def label(self) -> str:
        hours = _("%(hours)d h") % {"hours": self.max_runtime_s // HOUR}
        gpus = ngettext("%(count)d GPU", "%(count)d GPUs", self.gpus_per_node) % {"count": self.gpus_per_node}
        if self.nodes == 1:
            return f"{gpus} · {hours}"
        nodes = ngettext("%(count)d node", "%(count)d nodes", self.nodes) % {"count": self.nodes}
        return f"{nodes} × {gpus} · {hours}"


def parse_preset(value: str) -> Preset | None:
    try:
        gpus, nodes, seconds = (int(part) for part in value.split(":"))
    except ValueError:
        return None
    return Preset(gpus, nodes, seconds)


def presets_for(
    *, max_gpus_per_job: int, gpu_hours_left: Decimal, most_gpus_per_node: int, ready_nodes: int, max_runtime_s: int
) -> list[Preset]:
    """The candidates that fit: the quota's GPUs per job and the hours left this week, the lab's nodes, the longest
    runtime. With hours left below the smallest, that one is still offered (the form's preview says why it waits)."""
    fitting = [
        preset
        for preset in (Preset(*candidate) for candidate in CANDIDATES)
        if preset.gpus_per_node * preset.nodes <= max_gpus_per_job
        and preset.gpus_per_node <= max(most_gpus_per_node, 1)
        and preset.nodes <= max(ready_nodes, 1)
        and preset.max_runtime_s <= max_runtime_s
        and preset.gpu_hours <= gpu_hours_left
    ]
    return fitting or [Preset(*CANDIDATES[0])]
