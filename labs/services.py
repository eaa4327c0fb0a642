"""Writes about the lab: inventory sync, cordon, drain and uncordon."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts import audit
from accounts.errors import Conflict
from accounts.models import User
from accounts.services import notice_send
from labs.backends.inventory import InventoryBackend, get_inventory_backend
from labs.inventory import NodeSpec
from labs.ledger import allocations_close
from labs.models import AllocationKind, Gpu, Node, NodeStatus
from labs.selectors import node_work
from labs.signals import allocations_ended

log = logging.getLogger(__name__)


@dataclasses.dataclass
class SyncReport:
    created: list[str] = dataclasses.field(default_factory=list)
    updated: list[str] = dataclasses.field(default_factory=list)
    marked_down: list[str] = dataclasses.field(default_factory=list)

    def __str__(self) -> str:
        return _("%(added)s nodes added, %(updated)s updated, %(down)s marked down") % {
            "added": len(self.created),
            "updated": len(self.updated),
            "down": len(self.marked_down),
        }


def _left(source: str) -> str:
    """The reason a node is down because its source stopped listing it (and up again if it comes back)."""
    return f"No longer in the {source} inventory."


def _set_status(node: Node, status: str, reason: str) -> bool:
    if node.status == status and node.status_reason == reason:
        return False
    node.status = status
    node.status_reason = reason
    node.status_changed_at = timezone.now()
    return True


@transaction.atomic
def inventory_sync(*, specs: list[NodeSpec], source: str, prune: bool = False) -> SyncReport:
    """Make the Node and Gpu rows match what the source says.

    Nodes are never deleted (the ledger refers to their GPUs); a node that left the source
    is marked down when `prune` is set.
    """
    report = SyncReport()
    existing = {node.name: node for node in Node.objects.select_for_update().prefetch_related("gpus")}
    for spec in specs:
        node = existing.get(spec.name)
        created = node is None
        if created:
            node = Node(name=spec.name, status_changed_at=timezone.now())
        changed = created or node.labels != spec.labels or node.source != source
        node.labels = dict(spec.labels)
        node.source = source
        if spec.ready is False:
            changed |= _set_status(node, NodeStatus.DOWN, _("Kubernetes reports the node NotReady."))
        elif spec.unschedulable:
            if node.status != NodeStatus.CORDONED:
                changed |= _set_status(node, NodeStatus.CORDONED, _("Cordoned in Kubernetes."))
        elif (spec.ready is True and node.status != NodeStatus.READY) or (
            # A node the file had dropped is listed again: it is back.
            spec.ready is None and node.status == NodeStatus.DOWN and node.status_reason == _left(source)
        ):
            changed |= _set_status(node, NodeStatus.READY, "")
        node.full_clean()
        node.save()
        changed |= _sync_gpus(node, spec, created)
        if created:
            report.created.append(node.name)
        elif changed:
            report.updated.append(node.name)

    if prune:
        listed = {spec.name for spec in specs}
        for name, node in existing.items():
            if name not in listed and node.status != NodeStatus.DOWN:
                _set_status(node, NodeStatus.DOWN, _left(source))
                node.save(update_fields=["status", "status_reason", "status_changed_at", "updated_at"])
                report.marked_down.append(name)
    return report


def _sync_gpus(node: Node, spec: NodeSpec, created: bool) -> bool:
    changed = False
    current = {} if created else {gpu.index: gpu for gpu in node.gpus.all()}
    for gpu_spec in spec.gpus:
        gpu = current.pop(gpu_spec.index, None) or Gpu(node=node, index=gpu_spec.index)
        values = {"model": gpu_spec.model, "memory_mb": gpu_spec.memory_mb}
        if gpu_spec.uuid:
            values["uuid"] = gpu_spec.uuid
        if gpu.pk is None or any(getattr(gpu, key) != value for key, value in values.items()):
            for key, value in values.items():
                setattr(gpu, key, value)
            gpu.save()
            changed = True
    # GPUs that left the node go, unless the ledger still refers to them.
    for gpu in current.values():
        if not gpu.allocations.exists():
            gpu.delete()
            changed = True
    return changed


def node_cordon(*, node: Node, by: User, reason: str = "", backend: InventoryBackend | None = None) -> Node:
    """Stop placing new work on the node; what runs there keeps running. A cordoned node takes a new reason."""
    backend = backend or get_inventory_backend()
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        before = audit.snapshot(node, NODE_STATE)
        if node.status == NodeStatus.CORDONED:
            if reason and reason != node.status_reason:
                _set_status(node, NodeStatus.CORDONED, reason)
                node.save(update_fields=["status", "status_reason", "status_changed_at", "updated_at"])
                _audit(by, "node.cordon", node, before, reason)
            return node
        if node.status == NodeStatus.DOWN:
            raise Conflict(_("%(node)s is down; it cannot be cordoned until it is back.") % {"node": node.name})
        backend.set_unschedulable(node.name, True)
        _set_status(node, NodeStatus.CORDONED, reason or _("Cordoned by %(name)s.") % {"name": by.username})
        node.save(update_fields=["status", "status_reason", "status_changed_at", "updated_at"])
        _audit(by, "node.cordon", node, before, reason)
    return node


NODE_STATE = ("status", "status_reason")


def _audit(by: User, action: str, node: Node, before: dict, reason: str, **extra) -> None:
    after = {**audit.snapshot(node, NODE_STATE), **extra}
    audit.record(actor=by, action=action, target=node, before=before, after=after, reason=reason, only_changes=False)


def node_drain(
    *, node: Node, by: User, reason: str, backend: InventoryBackend | None = None, now: dt.datetime | None = None
) -> list[str]:
    """Cordon the node and stop what runs on it: notebooks end, job attempts go back to the queue (as a reservation
    that takes a node does: labs.signals.allocations_ended). Returns the holders it stopped (ledger refs)."""
    now = now or timezone.now()
    log.info("%s drains %s: %s", by.username, node.name, reason)
    with transaction.atomic():
        node = node_cordon(node=node, by=by, reason=reason, backend=backend)
        work = node_work(node)
        for allocation in work:
            what = _("notebook") if allocation.kind == AllocationKind.NOTEBOOK else _("job")
            notice_send(
                user=allocation.user,
                level="warning",
                text=_("Your %(what)s on %(node)s was stopped: the lab took the node out of service (%(reason)s).")
                % {"what": what, "node": node.name, "reason": reason},
                ref=f"{allocation.ref}:drain:{node.name}",
            )
        ids = [allocation.pk for allocation in work]
        _audit(by, "node.drain", node, {}, reason, stopped=sorted({allocation.ref for allocation in work}))
        if ids:
            allocations_close(ids=ids, at=now, reason=f"Drained: {reason}")
            why = _("Its node %(node)s was drained: %(reason)s") % {"node": node.name, "reason": reason}
            transaction.on_commit(lambda: allocations_ended.send(sender=Node, allocation_ids=ids, reason=why))
    return sorted({allocation.ref for allocation in work})


def node_uncordon(*, node: Node, by: User, reason: str = "", backend: InventoryBackend | None = None) -> Node:
    """Place work on the node again; `reason` goes to the log (the node's own reason is cleared)."""
    log.info("%s uncordons %s: %s", by.username, node.name, reason)
    backend = backend or get_inventory_backend()
    with transaction.atomic():
        node = Node.objects.select_for_update().get(pk=node.pk)
        if node.status != NodeStatus.CORDONED:
            return node
        before = audit.snapshot(node, NODE_STATE)
        backend.set_unschedulable(node.name, False)
        _set_status(node, NodeStatus.READY, "")
        node.save(update_fields=["status", "status_reason", "status_changed_at", "updated_at"])
        _audit(by, "node.uncordon", node, before, reason)
    return node
