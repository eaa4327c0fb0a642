"""Warm the lab before class: for a course reservation with a notebook profile, pull the profile's image on the
reserved nodes ahead of time and start placeholder servers held for the course's students.

- **Pre-pull** (NOTEBOOKS_PREWARM_MIN before the window): on Kubernetes (HUB_SPAWNER=kubernetes) one batch/v1 Job per
  reserved node, pinned to it, whose only container is the profile's image running `true`: the kubelet pulls the
  image there (Zero-to-JupyterHub's pre-puller, as Jobs). With the local spawner images are not used: a no-op that
  says so.
- **Placeholders** (Zero-to-JupyterHub's user placeholders): `Reservation.placeholders` notebook sessions of the
  profile, held by the reservation's owner's hub account and started by the ordinary pass, so each holds a GPU share
  and has its image on its node. When a student of the course presses Start, the pass hands them the oldest ready
  placeholder: its GPU share goes over to the student's session (the ledger closes one and opens the other on the same
  GPU) and its server stops; the student's own server starts on a warm node at once. Those left at the window's end
  stop.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.errors import BackendError
from accounts.models import CourseRole, Enrollment
from accounts.selectors import course_ids_active_for, hub_username
from labs.backends.kube import api_client, kubernetes_error, request_timeout
from labs.ledger import GpuShare, Ref, allocation_open
from labs.models import NOTEBOOK_ACTIVE, WORKING_STATUSES, Gpu, NotebookSession, NotebookStatus, Reservation

log = logging.getLogger(__name__)

LOCAL_NO_OP = "{spawner} spawner: images are not pulled on this machine, nothing to pre-pull for {nodes}"
HANDED_OVER = "Handed to a student of the course."


def prepull_manifest(*, reservation_id: int, node: str, image: str, namespace: str) -> dict:
    """The batch/v1 Job that pulls `image` onto `node` (and exits at once)."""
    name = f"prepull-r{reservation_id}-{node}"[:63].rstrip("-.")
    labels = {"app.kubernetes.io/part-of": "gpu-lab-portal", "portal.gpulab.io/role": "prepull"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 2,
            "activeDeadlineSeconds": 3600,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeName": node,
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "pull",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/bin/sh", "-c", "true"],
                            "resources": {
                                "requests": {"cpu": "10m", "memory": "16Mi"},
                                "limits": {"cpu": "100m", "memory": "64Mi"},
                            },
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                        }
                    ],
                },
            },
        },
    }


def prepull(reservation: Reservation) -> str:
    """Start the pre-pull of the reservation's profile image on its nodes; what was done, in a line."""
    nodes = sorted(reservation.nodes.values_list("name", flat=True))
    image = reservation.notebook_profile.image
    if settings.HUB_SPAWNER != "kubernetes":
        return LOCAL_NO_OP.format(spawner=settings.HUB_SPAWNER, nodes=", ".join(nodes) or "no node")
    from kubernetes import client

    try:
        batch = client.BatchV1Api(api_client())
    except Exception as exc:  # no configuration: said, and tried again at the next tick
        raise kubernetes_error(exc, f"pre-pull {image}") from exc
    namespace = settings.NOTEBOOKS_NAMESPACE
    for node in nodes:
        manifest = prepull_manifest(reservation_id=reservation.pk, node=node, image=image, namespace=namespace)
        try:
            batch.create_namespaced_job(
                namespace,
                client.V1Job.from_dict(manifest),  # the client's own model (it validates before sending)
                _headers={"Content-Type": "application/json"},
                _preload_content=False,
                _request_timeout=request_timeout(),
            )
        except client.exceptions.ApiException as exc:
            if exc.status != 409:  # AlreadyExists: pulled or pulling
                raise kubernetes_error(exc, f"pre-pull {image} on {node}") from exc
        except Exception as exc:
            raise kubernetes_error(exc, f"pre-pull {image} on {node}") from exc
    return f"pre-pulling {image} on {', '.join(nodes)}"


def prewarm_due(now: dt.datetime) -> list[Reservation]:
    """Approved course reservations with a notebook profile whose window starts within NOTEBOOKS_PREWARM_MIN."""
    return list(
        Reservation.objects.filter(
            status__in=WORKING_STATUSES,  # approved, or active once its window opened
            course__isnull=False,
            notebook_profile__isnull=False,
            starts_at__lte=now + dt.timedelta(minutes=settings.NOTEBOOKS_PREWARM_MIN),
            ends_at__gt=now,
        ).select_related("notebook_profile", "owner", "course")
    )


def prewarm_pass(*, now: dt.datetime | None = None) -> dict[str, int]:
    """Pre-pull and top up placeholders for the reservations about to start; stop those of ended ones."""
    now = now or timezone.now()
    report = {"prepulled": 0, "placeholders": 0, "ended": 0}
    for reservation in prewarm_due(now):
        if reservation.prepulled_at is None:
            try:
                log.info("reservation %s: %s", reservation.pk, prepull(reservation))
            except BackendError as exc:
                log.warning("reservation %s: pre-pull failed (tried again next tick): %s", reservation.pk, exc)
            else:
                Reservation.objects.filter(pk=reservation.pk).update(prepulled_at=now)
                report["prepulled"] += 1
        report["placeholders"] += _top_up(reservation, now)
    with transaction.atomic():
        ended = NotebookSession.objects.select_for_update().filter(
            placeholder_for__isnull=False, placeholder_for__ends_at__lte=now, status__in=NOTEBOOK_ACTIVE
        )
        for session in ended:
            if session.status == NotebookStatus.QUEUED:
                session.status, session.stopped_at = NotebookStatus.STOPPED, now
                session.save(update_fields=["status", "stopped_at"])
            elif session.stop_requested_at is None:
                session.stop_requested_at = now
                session.save(update_fields=["stop_requested_at"])
            report["ended"] += 1
    return report


def _top_up(reservation: Reservation, now: dt.datetime) -> int:
    """Queue placeholders until the reservation has its number held (handed-over ones are not replaced)."""
    with transaction.atomic():
        Reservation.objects.select_for_update().filter(pk=reservation.pk).first()
        made = NotebookSession.objects.filter(placeholder_for=reservation).count()
        missing = max(0, reservation.placeholders - made)
        NotebookSession.objects.bulk_create(
            NotebookSession(
                user=reservation.owner,
                profile=reservation.notebook_profile,
                course=reservation.course,
                status=NotebookStatus.QUEUED,
                hub_user=hub_username(reservation.owner),
                requested_at=now,
                reason="A placeholder held for the course's students.",
                placeholder_for=reservation,
            )
            for _ in range(missing)
        )
    return missing


def placeholder_take(session: NotebookSession, now: dt.datetime) -> tuple[NotebookSession, Gpu, NotebookSession] | None:
    """Hand a ready placeholder of the same profile, held for a course the person takes, to this queued session:
    (the session now starting, its GPU, the placeholder to stop); None when there is none."""
    if session.placeholder_for_id is not None:
        return None
    # Courses the person takes as a student (their teachers' own notebooks start as usual).
    taken = Enrollment.objects.filter(user_id=session.user_id, role=CourseRole.STUDENT).values_list(
        "course_id", flat=True
    )
    courses = course_ids_active_for(session.user, today=timezone.localdate(now)) & set(taken)
    if not courses:
        return None
    with transaction.atomic():
        held = (
            NotebookSession.objects.select_for_update(skip_locked=True)
            .filter(
                placeholder_for__isnull=False,
                placeholder_for__course_id__in=courses,
                placeholder_for__ends_at__gt=now,
                status=NotebookStatus.READY,
                stop_requested_at__isnull=True,
                profile_id=session.profile_id,
            )
            .select_related("placeholder_for")
            .order_by("ready_at", "id")
            .first()
        )
        row = (
            NotebookSession.objects.select_for_update()
            .select_related("profile", "user")
            .filter(pk=session.pk, status=NotebookStatus.QUEUED)
            .first()
        )
        if held is None or row is None:
            return None
        from labs.notebooks.services import session_finish

        gpu = Gpu.objects.select_related("node").get(node__name=held.node, index=held.gpu_index)
        session_finish(held, NotebookStatus.STOPPED, HANDED_OVER, now=now)
        course_id = held.placeholder_for.course_id
        allocation_open(
            ref=Ref.notebook(row.pk),
            user_id=row.user_id,
            shares=[GpuShare(gpu_id=gpu.pk, share=row.profile.gpu_share)],
            at=now,
            course_id=course_id,
            reason=f"notebook {row.profile.slug} (a placeholder handed over)",
        )
        ends_at = min(now + dt.timedelta(hours=float(row.profile.max_session_h)), held.placeholder_for.ends_at)
        row.status = NotebookStatus.STARTING
        row.course_id = course_id
        row.node, row.gpu_index = gpu.node.name, gpu.index
        row.starting_at, row.ends_at, row.must_end_by = now, ends_at, held.placeholder_for.ends_at
        row.start_attempts += 1
        row.reason = f"Starting on {gpu.node.name} (warm: held for your class)."
        row.save(
            update_fields=[
                *("status", "course", "node", "gpu_index", "starting_at", "ends_at", "must_end_by"),
                *("start_attempts", "reason"),
            ]
        )
    return row, gpu, held
