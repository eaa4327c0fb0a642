"""Fill the day sums beside the ledger (UsageDay, UsageDayCourse) from the ledger's closed entries, as
labs.usage.daysums.rebuild does: on PostgreSQL one INSERT ... SELECT that cuts every closed entry at the lab's
midnights; elsewhere the same cut in Python. Kept here as it was written, not imported, so later changes to the
module do not change what this migration did."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal

from django.conf import settings
from django.db import migrations
from django.utils import timezone

FILL_SQL = """
    INSERT INTO labs_usageday (day, user_id, course_key, kind, share_us)
    SELECT d::date, a.user_id, COALESCE(a.course_id, 0), a.kind,
           SUM(ROUND(a.share * 1000)::bigint * ROUND(EXTRACT(EPOCH FROM
               LEAST(a.ends_at, (d + interval '1 day') AT TIME ZONE %(tz)s)
               - GREATEST(a.starts_at, d AT TIME ZONE %(tz)s)) * 1000000)::bigint)
    FROM labs_allocation a,
         LATERAL generate_series((a.starts_at AT TIME ZONE %(tz)s)::date::timestamp,
                                 ((a.ends_at - interval '1 microsecond') AT TIME ZONE %(tz)s)::date::timestamp,
                                 interval '1 day') AS d
    WHERE a.ends_at IS NOT NULL AND a.ends_at > a.starts_at
    GROUP BY 1, 2, 3, 4
"""
COURSES_SQL = """
    INSERT INTO labs_usagedaycourse (day, course_key, kind, share_us)
    SELECT day, course_key, kind, SUM(share_us) FROM labs_usageday GROUP BY day, course_key, kind
"""


def _midnight(day: dt.date) -> dt.datetime:
    local = timezone.make_aware(dt.datetime.combine(day, dt.time.min), timezone.get_default_timezone())
    return local.astimezone(dt.UTC)


def fill(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            cursor.execute(FILL_SQL, {"tz": settings.TIME_ZONE})
            cursor.execute(COURSES_SQL)
        return
    allocation, usage_day = apps.get_model("labs", "Allocation"), apps.get_model("labs", "UsageDay")
    usage_day_course = apps.get_model("labs", "UsageDayCourse")
    per_person: dict[tuple, int] = defaultdict(int)
    rows = allocation.objects.filter(ends_at__isnull=False).values_list(
        "user_id", "course_id", "kind", "share", "starts_at", "ends_at"
    )
    for user_id, course_id, kind, share, start, end in rows.iterator(chunk_size=5000):
        milli, start, end = int(Decimal(share) * 1000), start.astimezone(dt.UTC), end.astimezone(dt.UTC)
        day = timezone.localtime(start, timezone.get_default_timezone()).date()
        while start < end:
            cut = min(end, _midnight(day + dt.timedelta(days=1)))
            per_person[(day, user_id, course_id or 0, kind)] += milli * ((cut - start) // dt.timedelta(microseconds=1))
            start, day = cut, day + dt.timedelta(days=1)
    per_course: dict[tuple, int] = defaultdict(int)
    for (day, _user, course_key, kind), held in per_person.items():
        per_course[(day, course_key, kind)] += held
    usage_day.objects.bulk_create(
        [usage_day(day=d, user_id=u, course_key=c, kind=k, share_us=h) for (d, u, c, k), h in per_person.items()],
        batch_size=1000,
    )
    usage_day_course.objects.bulk_create(
        [usage_day_course(day=d, course_key=c, kind=k, share_us=h) for (d, c, k), h in per_course.items()],
        batch_size=1000,
    )


class Migration(migrations.Migration):
    dependencies = [("labs", "0013_usage_day_sums")]

    operations = [migrations.RunPython(fill, migrations.RunPython.noop)]
