"""The --prewarm half of the class-start benchmark (bench_class_start): a second course whose reservation has a
notebook profile and placeholders, set up beside the first one, so that one run measures press-to-ready without and
with a warmed lab on the same machine, hub and portal.

The echo spawner stands in for the cluster: each node's first start of an image waits --pull-s (the image pull a
kubelet would do; HUB_ECHO_COLD_START_S). Without --prewarm every node pays it at the first press; with it, the
placeholders pay it before class and are handed to the students as they press Start."""

from __future__ import annotations

import time

import requests

SETUP = """
import datetime as dt, json, math, os
from decimal import Decimal
from django.utils import timezone
from labs.images import ImageRule
from labs.models import Node, NotebookProfile, Reservation, ReservationNode
from accounts.models import Course, Enrollment, Role, User
from accounts.services import token_issue

students, gpus = int(os.environ["BENCH_STUDENTS"]), int(os.environ["BENCH_GPUS"])
course = Course.objects.create(code="BENCH-102", name="Class start, warmed",
                               term_start=dt.date(2000, 1, 1), term_end=dt.date(2999, 1, 1))
teacher = User.objects.create(username="bench-teacher", role=Role.TEACHER)
course.teachers.add(teacher)
ImageRule.objects.create(pattern="bench/echo-warm:1", description="The warmed class's stand-in image")
profile = NotebookProfile.objects.create(slug="bench-warm", name="Quarter GPU, warmed", image="bench/echo-warm:1",
                                         gpu_share=Decimal("0.25"), cpu=Decimal("1"), memory_gb=Decimal("2"),
                                         max_session_h=Decimal("4"), roles=[])
profile.courses.add(course)
people = []
for n in range(students):
    user = User.objects.create(username=f"bench-w{n:04d}", role=Role.STUDENT)
    Enrollment.objects.create(user=user, course=course)
    people.append(user)
reserved = max(1, min(gpus // 2, math.ceil(students / 4)))
now = timezone.now()
reservation = Reservation.objects.create(
    owner=teacher, created_by=teacher, course=course, title="Warmed class", status="approved",
    starts_at=now - dt.timedelta(minutes=1), ends_at=now + dt.timedelta(hours=4),
    notebook_profile=profile, placeholders=min(students, reserved * 4))
for node in Node.objects.order_by("-name")[:reserved]:
    ReservationNode.objects.create(reservation=reservation, node=node, starts_at=reservation.starts_at,
                                   ends_at=reservation.ends_at)
print(json.dumps({"students": [token_issue(user=u) for u in people], "reserved_nodes": reserved,
                  "placeholders": reservation.placeholders, "teacher": token_issue(user=teacher)}))
"""


def wait_for_placeholders(portal_url: str, admin_token: str, count: int, timeout_s: float) -> float:
    """Seconds until `count` placeholders are ready (they start as soon as the portal's worker ticks)."""
    began = time.monotonic()
    headers = {"Authorization": f"Token {admin_token}"}
    while time.monotonic() - began < timeout_s:
        rows = requests.get(f"{portal_url}/api/v1/notebooks/?limit=500", headers=headers, timeout=30).json()
        if sum(1 for r in rows if r["owner"] == "bench-teacher" and r["status"] == "ready") >= count:
            break
        time.sleep(0.5)
    else:
        import sys

        held = [(r["status"], r["reason"]) for r in rows if r["owner"] == "bench-teacher"]
        print(f"placeholders not ready: {held[:3]} ({len(held)})", file=sys.stderr)
    return round(time.monotonic() - began, 1)


def handed_over(portal_url: str, admin_token: str) -> int:
    """How many placeholders went to students (stopped, handed over)."""
    headers = {"Authorization": f"Token {admin_token}"}
    rows = requests.get(f"{portal_url}/api/v1/notebooks/?limit=500", headers=headers, timeout=30).json()
    return sum(1 for r in rows if r["owner"] == "bench-teacher" and r["status"] == "stopped")


def summary(r: dict) -> str:
    """The line of figures that compares the two classes."""
    w = r["prewarm"]
    return (
        f"  press to ready, same run, first pull of an image on a node {r['pull_s']:g} s:"
        f" without prewarm p50 {r['p50_press_to_ready_s']} s, p95 {r['p95_press_to_ready_s']} s"
        f" ({r['ready']} ready); with prewarm p50 {w['p50_press_to_ready_s']} s,"
        f" p95 {w['p95_press_to_ready_s']} s ({w['ready']} ready, {w['queued']} queued;"
        f" {w['handed_over']} of {w['placeholders']} placeholders handed over)"
    )
