"""A whole portal seeded once per test module, and one signed-in Chromium context per role and language, shared.

The accessibility sweep (test_accessibility.py) and the phone layout checks (test_phones.py) visit every page the
header links to and the main detail pages. Seeding the demo lab and signing in once per module, not per page, keeps
them fast: pytest-django's `live_server` would flush the database after every test, so these modules run their own
live server and flush once, at the end of the module.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
ROLES = ("student", "teacher", "admin")  # the demo lab's users of those names (labs/management/commands/seed_demo.py)
# The demo's "student" and "teacher" are renamed for the sweep: their names are English UI words, which the sweep
# looks for on pages in Portuguese (a name is the person's, not the portal's). Their passwords stay "<role>-demo".
USERNAMES = {"student": "ana", "teacher": "tiago", "admin": "admin"}
LANGUAGES = {"en": "en-US,en;q=0.9", "pt-BR": "pt-BR,pt;q=0.9"}
VIEWPORTS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}
# A Wednesday noon in the lab's zone: the week's timeline, the usage windows and the quotas do not depend on the day
# the tests run.
NOW = dt.datetime(2026, 3, 11, 12, 0)


@dataclasses.dataclass
class Portal:
    url: str
    pages: dict[str, list[str]]  # role -> the detail pages that role can open (the header's links are read off pages)
    connections: set = dataclasses.field(default_factory=set)  # the tests' database connections, closed at the end


def _seed() -> dict[str, list[str]]:
    """The demo lab (seed_demo) and, on top, what makes every page show its rows: jobs in several states, notebooks
    starting and ready, a week of GPU-hours in the ledger. Returns each role's detail pages."""
    from accounts.models import AuditEntry, Course, User
    from jobs.models import JobState
    from jobs.services.templates import template_save
    from labs.images import images_offered
    from labs.models import Allocation, Gpu, NotebookProfile, NotebookSession, NotebookStatus, Reservation
    from tests.jobs.factories import JobFactory

    call_command("seed_demo", "--nodes", "12", "--force", stdout=open("/dev/null", "w"))  # noqa: SIM115
    now = timezone.now()
    people = {name: User.objects.get(username=name) for name in ("admin", "teacher", "student", "student2")}
    course = people["student"].enrollments.get(course__code="DL-101").course
    jobs = {
        "student": JobFactory(
            owner=people["student"],
            course=course,
            name="mnist",
            state=JobState.SUCCEEDED,
            node_names=["gpu03"],
            gpu_indices=[0],
            started_at=now - dt.timedelta(hours=2),
            running_at=now - dt.timedelta(hours=2),
            finished_at=now - dt.timedelta(hours=1),
            exit_code=0,
        ),
        "teacher": JobFactory(
            owner=people["teacher"],
            name="resnet",
            state=JobState.RUNNING,
            node_names=["gpu04"],
            gpu_indices=[0],
            started_at=now - dt.timedelta(minutes=30),
            running_at=now - dt.timedelta(minutes=29),
        ),
    }
    JobFactory(owner=people["student"], name="queued one", state=JobState.QUEUED, position=1)
    JobFactory(owner=people["student2"], name="broken", state=JobState.FAILED, exit_code=1, finished_at=now)
    jobs["admin"] = jobs["teacher"]
    quarter = NotebookProfile.objects.get(slug="quarter-gpu")
    NotebookSession.objects.create(
        user=people["student"],
        profile=quarter,
        course=course,
        status=NotebookStatus.STARTING,
        hub_user="student",
        node="gpu05",
        gpu_index=0,
        starting_at=now,
        reason="Starting on gpu05.",
    )
    NotebookSession.objects.create(
        user=people["student2"],
        profile=NotebookProfile.objects.get(slug="dl101-half"),
        course=course,
        status=NotebookStatus.READY,
        hub_user="student2",
        node="gpu06",
        gpu_index=0,
        url="http://127.0.0.1:8001/user/student2/nb1/",
        starting_at=now - dt.timedelta(minutes=40),
        ready_at=now - dt.timedelta(minutes=39),
        ends_at=now + dt.timedelta(hours=2),
    )
    gpus = list(Gpu.objects.order_by("node__name")[:3])
    monday = timezone.make_aware(dt.datetime(2026, 3, 9))
    for day in range(3):
        start = monday + dt.timedelta(days=day, hours=9)
        for who, gpu, share in (("student", gpus[0], "1"), ("student2", gpus[1], "0.5"), ("teacher", gpus[2], "1")):
            Allocation.objects.create(
                user=people[who],
                gpu=gpu,
                kind="job",
                ref=f"job:{who}{day}#1",
                share=Decimal(share),
                starts_at=start,
                ends_at=start + dt.timedelta(hours=3),
                course=course,
            )
    for role, name in USERNAMES.items():
        User.objects.filter(username=role).update(username=name)
        # The audit trail keeps names as they were written (seed_demo's): as if the demo had used these from the start.
        AuditEntry.objects.filter(actor_name=role).update(actor_name=name)
        AuditEntry.objects.filter(target_type="user", target_label=role).update(target_label=name)
        AuditEntry.objects.filter(action="course.teacher_add", after={"teacher": role}).update(after={"teacher": name})
    # The Brazilian lab names its courses in Portuguese (the demo's are English; "Natural Language Processing" holds
    # an English UI word).
    Course.objects.filter(code="NLP-220").update(name="Processamento de linguagem natural")
    reservation = Reservation.objects.get(title="DL-101 lab session")
    pending = Reservation.objects.get(title="NLP-220 final runs")
    common = ["/account/", "/lab/nodes/gpu01/"]
    template = template_save(
        user=people["teacher"],
        course=course,
        name="Train for N epochs",
        description="Prints the epochs.",
        image=next(image.name for image in images_offered() if not image.pattern),
        script='echo "epochs $EPOCHS"\n',
        max_runtime_s=600,
        parameters=[{"name": "EPOCHS", "label": "Epochs", "type": "int", "min": 1, "max": 50, "default": 3}],
    )
    return {
        "student": [
            *common,
            f"/jobs/{jobs['student'].pk}/",
            "/courses/DL-101/job-templates/",
            f"/jobs/new/template/{template.pk}/",
        ],
        "teacher": [
            *common,
            f"/lab/reservations/{reservation.pk}/",
            f"/jobs/{jobs['teacher'].pk}/",
            "/jobs/new/",
            "/lab/reservations/new/",
            "/courses/DL-101/roster/",
            "/courses/DL-101/job-templates/",
            "/courses/DL-101/job-templates/new/",
            f"/courses/DL-101/job-templates/{template.pk}/",
        ],
        "admin": [
            *common,
            f"/lab/reservations/{reservation.pk}/",
            f"/jobs/{jobs['admin'].pk}/",
            "/jobs/new/",
            "/lab/reservations/new/",
            "/lab/reservations/approvals/",
            f"/lab/reservations/{pending.pk}/",
            "/notebooks/profiles/",
            "/courses/DL-101/roster/",
        ],
    }


@pytest.fixture(scope="module")
def portal(django_db_setup, django_db_blocker):
    """The seeded portal behind its own live server, for the whole module; the database is flushed after it."""
    with django_db_blocker.unblock(), pytest.MonkeyPatch.context() as patch:
        frozen = timezone.make_aware(NOW)
        patch.setattr(timezone, "now", lambda: frozen)
        server = LiveServer("localhost")
        server._live_server_modified_settings.enable()
        portal = Portal(url=server.url, pages={})
        # What the migrations wrote (the role policies, ...): flushed with the rest at the end and put back, as
        # Django's serialized rollback does, so the database tests after this module still find it.
        from django.db import connection as default

        written_by_migrations = default.creation.serialize_db_to_string()
        try:
            portal.pages = _seed()
            yield portal
        finally:
            server._live_server_modified_settings.disable()
            server.stop()
            for connection in portal.connections:
                connection.close()
            call_command("flush", interactive=False, verbosity=0, inhibit_post_migrate=True)
            default.creation.deserialize_db_from_string(written_by_migrations)
            # The rows came back with their ids; the id sequences, restarted by the flush, follow them.
            from django.apps import apps
            from django.core.management.color import no_style

            with default.cursor() as cursor:
                for statement in default.ops.sequence_reset_sql(no_style(), apps.get_models()):
                    cursor.execute(statement)


@pytest.fixture(autouse=True)
def close_test_connections(portal):
    """Each test's database connection is closed once the module is done. The tests are `django_db` (the portal's
    data outlives them), and a test's connection is not the one the module's teardown sees (it lives in the test's
    context): left open, it would keep the test database from being dropped at the end of the session."""
    from django.db import connections

    portal.connections.add(connections["default"])


@pytest.fixture(scope="module")
def chromium(browser):
    """The module's Chromium: tests/browser/conftest.py's `browser` (one per module, the launch arguments there)."""
    return browser


@pytest.fixture(scope="module")
def signed_in(portal, chromium):
    """signed_in(role, language) -> a page of that role's context, signed in once and reused by every test."""
    from playwright.sync_api import expect

    pages = {}

    def get(role: str, language: str = "en"):
        if (role, language) not in pages:
            context = chromium.new_context(
                locale=language,
                extra_http_headers={"Accept-Language": LANGUAGES[language]},
                viewport=VIEWPORTS["desktop"],
            )
            # Nothing leaves loopback: the API docs' CDN and the like fail at once instead of timing out. Nor does a
            # running job's log follow (a stream that lasts as long as the job, in a server thread that would
            # outlive the module).
            context.route(lambda url: not url.startswith(portal.url) or "follow=1" in url, lambda route: route.abort())
            context.add_init_script(path=str(AXE))
            page = context.new_page()
            page.set_default_timeout(15_000)
            page.goto(portal.url + "/login/")
            page.locator("input[name=username]").fill(USERNAMES[role])
            page.locator("input[name=password]").fill(f"{role}-demo")
            page.locator("form button[type=submit]").first.click()
            expect(page.locator("nav.nav")).to_have_count(1)
            pages[role, language] = page
        return pages[role, language]

    yield get
    for page in pages.values():
        page.context.close()


def pages_of(page, portal: Portal, role: str) -> list[str]:
    """The paths the header links to (read off the dashboard, same-origin pages only) and the role's detail pages."""
    page.goto(portal.url + "/")
    hrefs = page.locator("header a[href]").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    linked = [href for href in hrefs if href.startswith("/") and not href.startswith("//")]
    return list(dict.fromkeys([*linked, *portal.pages[role]]))


SHOWN_TEXT = """() => {
  // What a reader sees and hears: the rendered text (innerText leaves out what is hidden, scripts and styles) and
  // the words screen readers say for visible elements. Swagger UI's own widget is third-party (as in the axe run).
  // What one types is not the page's language: code, file formats and commands (<code>student</code>, a roster's
  // column value) are left out, hidden for the moment of the reading.
  const widget = document.querySelector("#swagger-ui");
  const literal = [...document.querySelectorAll("code, kbd, samp, pre")].map(e => [e, e.style.display]);
  literal.forEach(([e]) => { e.style.display = "none"; });
  const text = document.body.innerText.replace(widget ? widget.innerText : "\\u0000", " ");
  literal.forEach(([e, display]) => { e.style.display = display; });
  const said = [...document.querySelectorAll("[aria-label], [title], [placeholder]")]
    .filter(e => !(widget && widget.contains(e)) && (e.offsetParent !== null || e.tagName === "BODY"))
    .map(e => [e.getAttribute("aria-label"), e.getAttribute("title"), e.getAttribute("placeholder")].join(" "));
  return [text, document.title, ...said].join("\\n");
}"""


def shown_text(page) -> str:
    """The page's visible text and its spoken labels (aria-label, title, placeholder of visible elements)."""
    return page.evaluate(SHOWN_TEXT)
