"""deploy/components/backups, drilled on this machine's PostgreSQL: the CronJob's own dump script writes a portal
database's dump and prunes old ones; deploy/README.md's restore command brings it back into a fresh database, and
`manage.py check_ledger` finds the restored ledger clean, row for row the same."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import time
import uuid

import pytest
from django.db import connection
from django.utils import timezone

from jobs.models import JobState
from tests.deploy.render import find, render
from tests.factories import AllocationFactory, CourseFactory, UserFactory
from tests.jobs.factories import JobFactory
from tests.test_deploy import manage

pytestmark = [pytest.mark.postgresql_only, pytest.mark.django_db(transaction=True)]
LAB = "deploy/overlays/lab"
TABLES = ("accounts_user", "accounts_course", "labs_allocation", "labs_node", "labs_gpu", "jobs_job")


def backup_pod() -> dict:
    return find(render(LAB), "CronJob", "gpu-lab-backup", "gpu-lab")["spec"]["jobTemplate"]["spec"]["template"]


def dump_script() -> tuple[str, dict[str, str]]:
    (dump,) = backup_pod()["spec"]["initContainers"]
    assert dump["command"][:2] == ["sh", "-ec"]
    env = {e["name"]: e["value"] for e in dump["env"] if "value" in e}
    assert [e["valueFrom"]["secretKeyRef"] for e in dump["env"] if "valueFrom" in e] == [
        {"name": "gpu-lab-portal", "key": "DATABASE_URL"}
    ]
    return dump["command"][2], env


def url(database: str) -> str:
    settings = connection.settings_dict
    return f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{database}"


def counts(database_url: str) -> dict[str, int]:
    query = " union all ".join(f"select '{t}', count(*) from {t}" for t in TABLES)
    out = subprocess.run(
        ["psql", "-At", "-F", "=", database_url, "-c", query], capture_output=True, text=True, check=True
    ).stdout
    return {name: int(n) for name, n in (line.split("=") for line in out.splitlines())}


@pytest.fixture
def fresh_database():
    name = f"portal_restore_{uuid.uuid4().hex[:8]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    yield name
    with connection.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_the_nightly_dump_restores_into_a_fresh_database_with_a_clean_ledger(tmp_path, fresh_database):
    for tool in ("pg_dump", "pg_restore", "psql"):
        assert shutil.which(tool), f"{tool} is missing (Debian: postgresql-client)"
    # Last week's usage (closed entries) and a job running now, holding its GPU (an open entry with a live holder).
    course = CourseFactory(code="DL-101")
    now = timezone.now()
    for hours, person in enumerate(UserFactory.create_batch(3), start=2):
        AllocationFactory(user=person, course=course, starts_at=now - dt.timedelta(days=7, hours=hours),
                          ends_at=now - dt.timedelta(days=7))  # fmt: skip
    job = JobFactory(state=JobState.RUNNING, started_at=now - dt.timedelta(minutes=30), running_at=now)
    AllocationFactory(user=job.owner, ref=f"job:{job.pk}#{job.attempt}", starts_at=job.started_at, ends_at=None)
    source = url(connection.settings_dict["NAME"])
    before = counts(source)
    assert before["labs_allocation"] == 4

    # The CronJob's script, its /backups the drill's folder; an old dump (20 days) goes, a recent one (3) stays.
    script, env = dump_script()
    backups = tmp_path / "backups"
    backups.mkdir()
    for name, age_days in (("portal-20250101T021700Z.dump", 20), ("portal-20250114T021700Z.dump", 3)):
        (backups / name).write_bytes(b"old")
        moment = time.time() - age_days * 86400
        os.utime(backups / name, (moment, moment))
    result = subprocess.run(
        ["sh", "-ec", script.replace("/backups", str(backups))],
        env={**os.environ, **env, "DATABASE_URL": source},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "portal-20250101T021700Z.dump" in result.stdout  # pruned, and said so
    dumps = sorted(p.name for p in backups.iterdir())
    assert "portal-20250101T021700Z.dump" not in dumps and "portal-20250114T021700Z.dump" in dumps
    (new,) = [n for n in dumps if n != "portal-20250114T021700Z.dump"]
    assert new.startswith("portal-") and new.endswith(".dump") and f"backed up {new}" in result.stdout

    # deploy/README.md's restore, into a database that has never seen the portal.
    target = url(fresh_database)
    restored = subprocess.run(
        ["pg_restore", "--clean", "--if-exists", "--no-owner", f"--dbname={target}", str(backups / new)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert restored.returncode == 0, restored.stderr
    assert counts(target) == before

    checked = manage("check_ledger", env={"DATABASE_URL": target, "DEBUG": "true"})
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 violations." in checked.stdout
    # And the restored schema is the code's: nothing left to migrate.
    migrations = manage("migrate", "--check", env={"DATABASE_URL": target, "DEBUG": "true"})
    assert migrations.returncode == 0, migrations.stdout + migrations.stderr


def test_a_broken_ledger_in_a_restored_database_is_found(tmp_path, fresh_database):
    """The drill's last step can fail: two holders of one whole GPU at once is a violation check_ledger names."""
    first = AllocationFactory(share=1)
    AllocationFactory(gpu=first.gpu, share=1)
    dump = tmp_path / "portal.dump"
    source = url(connection.settings_dict["NAME"])
    subprocess.run(["pg_dump", "--format=custom", f"--dbname={source}", f"--file={dump}"], check=True, timeout=300)
    target = url(fresh_database)
    subprocess.run(["pg_restore", "--no-owner", f"--dbname={target}", str(dump)], check=True, timeout=300)
    checked = manage("check_ledger", env={"DATABASE_URL": target, "DEBUG": "true"})
    assert checked.returncode == 1 and "FAIL" in checked.stdout


def test_the_backup_runs_nightly_without_overlap_and_keeps_its_dumps_for_the_values_days():
    docs = render(LAB)
    cron = find(docs, "CronJob", "gpu-lab-backup", "gpu-lab")["spec"]
    assert cron["schedule"] == "17 2 * * *" and cron["concurrencyPolicy"] == "Forbid"
    pod = backup_pod()["spec"]
    keep = {c["name"]: {e["name"]: e.get("value") for e in c["env"]} for c in pod["initContainers"] + pod["containers"]}
    assert keep["dump"]["BACKUP_KEEP_DAYS"] == keep["upload"]["BACKUP_KEEP_DAYS"] == "14"
    # The copy off the volume reads the bucket Rook made for the claim; without one it skips, never fails.
    upload = pod["containers"][0]
    assert {e["configMapRef"]["name"] for e in upload["envFrom"] if "configMapRef" in e} == {"gpu-lab-backups"}
    assert all(e.get("configMapRef", e.get("secretRef"))["optional"] for e in upload["envFrom"])
    assert find(docs, "ObjectBucketClaim", "gpu-lab-backups")["spec"]["storageClassName"] == "ceph-bucket"
    skipped = subprocess.run(["sh", "-ec", upload["command"][2]], env={"PATH": os.environ["PATH"]}, capture_output=True)
    assert skipped.returncode == 0 and b"no bucket" in skipped.stdout
