import datetime as dt
from decimal import Decimal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from accounts.errors import PortalError
from accounts.models import Course, CourseRole, Quota, Role, User
from accounts.services import course_upsert, enrollment_set, user_upsert
from labs.budgets.services import budget_create
from labs.inventory import demo_specs
from labs.models import Budget, NotebookProfile, Reservation
from labs.reservations.services import NodeRequest, reservation_create
from labs.services import inventory_sync

DEMO_USERS = [
    # username, role, courses
    ("admin", Role.ADMIN, []),
    ("teacher", Role.TEACHER, ["DL-101", "CV-210"]),
    ("teacher2", Role.TEACHER, ["NLP-220"]),
    ("student", Role.STUDENT, ["DL-101", "CV-210"]),
    ("student2", Role.STUDENT, ["DL-101"]),
    ("student3", Role.STUDENT, ["DL-101", "NLP-220"]),
    ("student4", Role.STUDENT, ["NLP-220"]),
    ("alumnus", Role.STUDENT, ["ML-2025S"]),
]


def demo_password(username: str) -> str:
    return f"{username}-demo"


class Command(BaseCommand):
    help = "Make a demo lab: nodes gpu01..gpu40 (one RTX 4090 each), courses, and demo users of every role."

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, default=40, help="How many demo nodes (default 40).")
        parser.add_argument(
            "--force", action="store_true", help="Allow it with DEBUG off (demo passwords are public!)."
        )

    def handle(self, *args, **options):
        if not settings.DEBUG and not options["force"]:
            raise CommandError("seed_demo makes users with public passwords; with DEBUG off it needs --force.")
        if not 1 <= options["nodes"] <= 99:
            raise CommandError("--nodes must be between 1 and 99.")
        today = timezone.localdate()
        with transaction.atomic():
            report = inventory_sync(specs=demo_specs(options["nodes"]), source="demo")
            term = (today - dt.timedelta(days=30), today + dt.timedelta(days=90))
            course_upsert(code="DL-101", name="Deep Learning", term_start=term[0], term_end=term[1])
            course_upsert(code="CV-210", name="Computer Vision", term_start=term[0], term_end=term[1])
            course_upsert(code="NLP-220", name="Natural Language Processing", term_start=term[0], term_end=term[1])
            course_upsert(
                code="ML-2025S",
                name="Machine Learning (last term)",
                term_start=today - dt.timedelta(days=200),
                term_end=today - dt.timedelta(days=60),
            )
            for username, role, courses in DEMO_USERS:
                user_upsert(username=username, role=role, password=demo_password(username), course_codes=courses)
            # student3 is DL-101's teaching assistant: sees its students' notebooks and may stop them.
            enrollment_set(
                user=User.objects.get(username="student3"),
                course=Course.objects.get(code="DL-101"),
                role=CourseRole.ASSISTANT,
            )
            booked = self._demo_reservations(today)
            profiles = self._demo_profiles()
            budgets = self._demo_budgets()

        self.stdout.write(
            self.style.SUCCESS(
                f"Demo lab ready: {report}; {booked} demo reservations made, {profiles} notebook profiles,"
                f" {budgets} budgets."
            )
        )
        self.stdout.write("Demo users (username / password / role):")
        for username, role, _ in DEMO_USERS:
            self.stdout.write(f"  {username:<10} {demo_password(username):<16} {role}")

    def _demo_profiles(self) -> int:
        """Notebook profiles: a quarter GPU for everyone, a whole GPU for staff, a half GPU for DL-101."""
        image = "quay.io/jupyter/pytorch-notebook:cuda12-python-3.12"
        rows = [
            ("quarter-gpu", "Notebook, ¼ RTX 4090", "0.25", "2", "8", "4", ["student", "teacher", "admin"], []),
            ("whole-gpu", "Notebook, whole RTX 4090", "1", "8", "32", "8", ["teacher", "admin"], []),
            ("dl101-half", "DL-101 lab, ½ RTX 4090", "0.5", "4", "16", "3", [], ["DL-101"]),
        ]
        for slug, name, share, cpu, memory, hours, roles, courses in rows:
            profile, _ = NotebookProfile.objects.update_or_create(
                slug=slug,
                defaults={
                    "name": name,
                    "description": "JupyterLab with PyTorch and CUDA 12.",
                    "image": image,
                    "gpu_share": Decimal(share),
                    "cpu": Decimal(cpu),
                    "memory_gb": Decimal(memory),
                    "max_session_h": Decimal(hours),
                    "roles": roles,
                    "is_active": True,
                },
            )
            profile.courses.set(Course.objects.filter(code__in=courses))
        # DL-101's students may take half a GPU in their notebooks (the course's quota says so).
        Quota.objects.update_or_create(
            course=Course.objects.get(code="DL-101"), defaults={"notebook_gpu_share": Decimal("0.5")}
        )
        return len(rows)

    def _demo_budgets(self) -> int:
        """Budgets in money: DL-101's term (blocks at 100 %) and CV-210's (warns), priced; student's month."""
        admin = User.objects.get(username="admin")
        made = 0
        for code, hours, on_exceed in (("DL-101", "400", "block"), ("CV-210", "250", "warn")):
            course = Course.objects.get(code=code)
            if not Budget.objects.filter(course=course).exists():
                budget_create(
                    by=admin,
                    course=course,
                    gpu_hours=Decimal(hours),
                    price_per_gpu_hour=Decimal("0.45"),
                    price_per_kwh=Decimal("0.30"),
                    on_exceed=on_exceed,
                )
                made += 1
        student = User.objects.get(username="student")
        if not Budget.objects.filter(user=student).exists():
            budget_create(
                by=admin, user=student, period="month", gpu_hours=Decimal("40"), price_per_gpu_hour=Decimal("0.45")
            )
            made += 1
        return made

    def _demo_reservations(self, today: dt.date) -> int:
        """A class tomorrow afternoon, and a whole-lab request waiting for the admin's approval."""
        teacher, teacher2 = User.objects.get(username="teacher"), User.objects.get(username="teacher2")
        tz = timezone.get_current_timezone()
        wanted = [
            (teacher, "DL-101 lab session", "DL-101", today + dt.timedelta(days=1), 14, 16, NodeRequest(count=8)),
            (
                teacher2,
                "NLP-220 final runs",
                "NLP-220",
                today + dt.timedelta(days=3),
                9,
                13,
                NodeRequest(all_nodes=True),
            ),
        ]
        made = 0
        for owner, title, code, day, start, end, nodes in wanted:
            if Reservation.objects.filter(owner=owner, title=title).exists():
                continue
            try:
                reservation_create(
                    by=owner,
                    title=title,
                    course=Course.objects.get(code=code),
                    starts_at=timezone.make_aware(dt.datetime.combine(day, dt.time(start)), tz),
                    ends_at=timezone.make_aware(dt.datetime.combine(day, dt.time(end)), tz),
                    nodes=nodes,
                )
                made += 1
            except PortalError as exc:  # e.g. the demo lab is smaller, or the slot is taken
                self.stdout.write(f"Skipped demo reservation {title!r}: {exc}")
        return made
