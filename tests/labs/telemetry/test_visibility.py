"""Who sees which holders, and the shortcut the hub takes: viewers with one audience key see the same."""

import itertools
import random

import pytest

from labs.telemetry.visibility import Viewer, audience_key, holder_index, public_gpu, public_gpus

STUDENT, OTHER, TEACHER, ADMIN = 1, 2, 3, 4
DL, CV = 10, 11


def holder(user, kind="notebook", course=None, share=1.0):
    return {
        "user_id": user,
        "user": f"user{user}",
        "course_id": course,
        "course": None if course is None else f"C{course}",
        "kind": kind,
        "ref": f"{kind}:{user}",
        "share": share,
        "since": "2026-01-05T10:00:00+00:00",
    }


def state(node, holders, *, stale=False, status="ready"):
    return {
        "key": f"{node}/0",
        "node": node,
        "index": 0,
        "uuid": None,
        "model": "NVIDIA GeForce RTX 4090",
        "util_pct": 50,
        "mem_used_mb": 100,
        "mem_total_mb": 24564,
        "temp_c": 60,
        "power_w": 200.0,
        "sampled_at": "2026-01-05T10:00:00+00:00",
        "stale": stale,
        "node_status": status,
        "holders": holders,
        "alerts": [{"kind": "temperature", "message": "hot"}],
    }


VIEWERS = {
    "student": Viewer(STUDENT, "sofia", "student", course_ids=frozenset({DL})),
    "other": Viewer(OTHER, "omar", "student"),
    "teacher": Viewer(TEACHER, "tess", "teacher", frozenset({DL}), frozenset({DL})),
    "admin": Viewer(ADMIN, "ada", "admin"),
}


def test_what_each_role_learns_about_holders():
    gpu = state("gpu01", [holder(STUDENT, course=DL, share=0.25), holder(OTHER, kind="job", share=0.5)])
    seen = {name: public_gpu(gpu, viewer)["holder"] for name, viewer in VIEWERS.items()}
    assert [h["user"] for h in seen["student"]["holders"]] == ["user1"] and seen["student"]["others"] == 1
    assert seen["student"]["holders"][0]["mine"] is True and seen["student"]["share"] == 0.75
    assert [h["user"] for h in seen["other"]["holders"]] == ["user2"]
    assert [h["user"] for h in seen["teacher"]["holders"]] == ["user1"] and seen["teacher"]["others"] == 1
    assert [h["user"] for h in seen["admin"]["holders"]] == ["user1", "user2"] and seen["admin"]["others"] == 0
    assert all("alerts" not in public_gpu(gpu, v) for n, v in VIEWERS.items() if n != "admin")
    assert public_gpu(gpu, VIEWERS["admin"])["alerts"] == [{"kind": "temperature", "message": "hot"}]


def test_a_teacher_sees_the_holders_booked_to_their_course_not_their_students_other_work():
    """sofia takes DL, which tess teaches: her notebook booked to DL is tess's to see; her personal job and her work
    booked to CV (another teacher's course) are not."""
    gpu = state(
        "gpu01",
        [
            holder(STUDENT, course=DL, share=0.25),
            holder(STUDENT, kind="job", share=0.25),
            holder(STUDENT, kind="job", course=CV, share=0.25),
        ],
    )
    seen = public_gpu(gpu, VIEWERS["teacher"])["holder"]
    assert [(h["kind"], h["course"]) for h in seen["holders"]] == [("notebook", f"C{DL}")] and seen["others"] == 2


@pytest.mark.django_db
def test_a_teachers_viewer_from_the_database_sees_their_students_course_work_only():
    """What viewers_for reads: tess teaches DL-101, which sofia takes; sofia's notebook booked to DL-101 shows,
    her job booked to no course does not (her enrolment shows tess nothing else)."""
    from labs.telemetry.visibility import viewer_for
    from tests.factories import CourseFactory, EnrollmentFactory, UserFactory

    tess, sofia = UserFactory(username="tess", role="teacher"), UserFactory(username="sofia", role="student")
    course = CourseFactory(code="DL-101")
    course.teachers.add(tess)
    EnrollmentFactory(user=sofia, course=course)
    gpu = state("gpu01", [holder(sofia.pk, course=course.pk, share=0.5), holder(sofia.pk, kind="job", share=0.5)])
    seen = public_gpu(gpu, viewer_for(tess))["holder"]
    assert [(h["kind"], h["course"]) for h in seen["holders"]] == [("notebook", f"C{course.pk}")]
    assert seen["others"] == 1


def test_available_means_ready_fresh_and_free_or_a_reservation_you_may_use():
    reserved = state("gpu02", [holder(TEACHER, kind="reservation", course=DL)])
    assert public_gpu(reserved, VIEWERS["student"])["available"] is True
    assert public_gpu(reserved, VIEWERS["student"])["holder"]["holders"][0]["user"] == "user3"
    assert public_gpu(reserved, VIEWERS["other"])["available"] is False
    assert public_gpu(state("gpu03", []), VIEWERS["other"])["available"] is True
    assert public_gpu(state("gpu03", [], stale=True), VIEWERS["other"])["available"] is False
    assert public_gpu(state("gpu03", [], status="cordoned"), VIEWERS["other"])["available"] is False
    busy_reserved = state("gpu04", [holder(TEACHER, kind="reservation", course=DL), holder(OTHER, kind="job")])
    assert public_gpu(busy_reserved, VIEWERS["student"])["available"] is False


def test_viewers_with_one_audience_key_see_exactly_the_same():
    rng = random.Random(6)
    users, courses, kinds = [1, 2, 3, 4, 5, 6], [None, 10, 11], ["notebook", "job", "reservation"]
    viewers = [
        Viewer(uid, f"u{uid}", role, frozenset(c), frozenset(t))
        for uid, role in zip(users, ["student", "student", "teacher", "teacher", "admin", "admin"], strict=True)
        for c, t in [((), ()), ((10,), ()), ((10, 11), (10,)), ((11,), (11,))]
        if role == "teacher" or not t
    ]
    for _ in range(300):
        gpus = [
            state(f"gpu{n}", [holder(rng.choice(users), rng.choice(kinds), rng.choice(courses))])
            for n in range(rng.randint(1, 4))
        ]
        index = holder_index(gpus)
        for one, two in itertools.combinations(viewers, 2):
            if audience_key(one, index) == audience_key(two, index):
                assert public_gpus(gpus, one) == public_gpus(gpus, two), (one, two, gpus)


def test_updates_carry_identity_sample_time_and_what_changed_as_the_viewer_sees_it():
    from labs.telemetry.visibility import public_changes

    gpus = [state("gpu01", [holder(OTHER, kind="job")]), state("gpu02", []), state("gpu03", [])]
    changed = {"gpu01/0": ["holders"], "gpu02/0": ["util_pct", "temp_c"], "gpu03/0": ["alerts"]}
    student = public_changes(gpus, changed, VIEWERS["student"])
    assert student == [
        {
            "node": "gpu01",
            "index": 0,
            "sampled_at": "2026-01-05T10:00:00+00:00",
            "available": False,
            "holder": {"busy": True, "share": 1.0, "holders": [], "others": 1},
        },
        {"node": "gpu02", "index": 0, "sampled_at": "2026-01-05T10:00:00+00:00", "temp_c": 60, "util_pct": 50},
    ]  # gpu03's alert is for admins: nothing of it for a student
    admin = public_changes(gpus, changed, VIEWERS["admin"])
    assert [change["node"] for change in admin] == ["gpu01", "gpu02", "gpu03"] and "alerts" in admin[2]
    # A sender that does not say what changed: whole records.
    assert public_changes(gpus[:1], {}, VIEWERS["admin"]) == public_gpus(gpus[:1], VIEWERS["admin"])
