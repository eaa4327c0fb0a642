"""The group mapping (accounts/signin): its settings' format, and what one application of a person's groups
adds and removes — only its own, never what an admin or a roster gave."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from accounts.models import CourseRole, Enrollment, MembershipSource, Role, RoleSource, TeachingSource
from accounts.signin.mapping import map_groups, parse_course_patterns, parse_role_groups
from accounts.signin.services import signin_groups_apply
from tests.factories import CourseFactory, EnrollmentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def mapping_settings(settings):
    settings.SIGNIN_ROLE_GROUPS = "Lab-Admins=admin, faculty=teacher ,students=student"
    settings.SIGNIN_DEFAULT_ROLE = "student"


def test_role_groups_read_case_blind_and_bad_pairs_are_configuration_errors():
    assert parse_role_groups("Lab-Admins=admin,faculty=Teacher") == {"lab-admins": "admin", "faculty": "teacher"}
    assert parse_role_groups("") == {}
    for bad in ("faculty", "faculty=dean", "=admin"):
        with pytest.raises(ImproperlyConfigured, match="SIGNIN_ROLE_GROUPS"):
            parse_role_groups(bad)


def test_course_patterns_need_code_and_part():
    with pytest.raises(ImproperlyConfigured, match="named groups"):
        parse_course_patterns(r"^course-(?P<code>\w+)$")
    with pytest.raises(ImproperlyConfigured, match="not a regular expression"):
        parse_course_patterns(r"^course-(?P<code>\w+")
    assert len(parse_course_patterns(r"^a-(?P<code>\w+)-(?P<part>students)$ ^b-(?P<code>\w+)-(?P<part>teachers)$")) == 2


def test_groups_map_to_the_highest_role_and_to_course_places():
    mapping = map_groups(["students", "FACULTY", "course-DL101-2026W-students", "course-ml201-2026w-teachers", "x"])
    assert mapping.role == Role.TEACHER and mapping.roles_named == ("teacher", "student")
    assert [(g.code, g.term, g.place) for g in mapping.course_groups] == [
        ("DL101", "2026W", "student"),
        ("ml201", "2026w", "teacher"),
    ]
    assert map_groups([]).role is None


def test_a_course_group_needs_the_course_of_that_term(caplog):
    user = UserFactory(role_source=RoleSource.IDP)
    this_year = CourseFactory(code="DL-101", term="2026W")
    with caplog.at_level("INFO", logger="portal.signin"):
        changes = signin_groups_apply(user=user, groups=["course-dl101-2025w-students", "course-xx999-2026w-students"])
    assert changes.added == [] and not Enrollment.objects.exists()
    assert "names no course of the portal (code xx999, term 2026w)" in caplog.text
    assert signin_groups_apply(user=user, groups=["course-dl101-2026w-students"]).added == [("DL-101", "student")]
    assert this_year.students.filter(pk=user.pk).exists()


def test_a_pattern_without_term_matches_by_code(settings):
    settings.SIGNIN_COURSE_PATTERNS = r"^(?P<code>[a-z0-9-]+)_(?P<part>students|teachers)$"
    user = UserFactory(role_source=RoleSource.IDP)
    course = CourseFactory(code="Stats-1")
    signin_groups_apply(user=user, groups=["stats1_teachers"])
    assert course.teachers.filter(pk=user.pk).exists()
    assert TeachingSource.objects.get(user=user, course=course).source == MembershipSource.IDP


def test_places_given_by_hand_or_by_a_roster_are_never_touched():
    user = UserFactory(role_source=RoleSource.IDP)
    by_hand, by_roster, by_groups = (CourseFactory(code=c, term="2026W") for c in ("HAND-1", "ROST-1", "GRP-1"))
    EnrollmentFactory(user=user, course=by_hand)
    Enrollment.objects.create(user=user, course=by_roster, source=MembershipSource.ROSTER)
    by_hand.teachers.add(user)

    # The groups name all three: only the missing one is added, the others keep their source.
    changes = signin_groups_apply(
        user=user,
        groups=[
            "course-hand1-2026w-students",
            "course-rost1-2026w-students",
            "course-grp1-2026w-students",
            "course-hand1-2026w-teachers",
        ],
    )
    assert changes.added == [("GRP-1", "student")]
    assert dict(user.enrollments.values_list("course__code", "source")) == {
        "HAND-1": "manual",
        "ROST-1": "roster",
        "GRP-1": "idp",
    }

    # The groups say nothing now: only what they gave goes.
    changes = signin_groups_apply(user=user, groups=[])
    assert changes.removed == [("GRP-1", "student")]
    assert dict(user.enrollments.values_list("course__code", "source")) == {"HAND-1": "manual", "ROST-1": "roster"}
    assert by_hand.teachers.filter(pk=user.pk).exists()


def test_the_role_follows_the_groups_only_when_the_groups_decide_it():
    follower = UserFactory(role=Role.TEACHER, role_source=RoleSource.IDP)
    assert signin_groups_apply(user=follower, groups=[]).role == Role.STUDENT  # lost the faculty group
    assert signin_groups_apply(user=follower, groups=["lab-admins"]).role == Role.ADMIN
    follower.refresh_from_db()
    assert follower.role == Role.ADMIN and follower.is_staff

    by_hand = UserFactory(role=Role.TEACHER)  # role_source manual: an admin decided
    assert signin_groups_apply(user=by_hand, groups=["students"]).role is None
    by_hand.refresh_from_db()
    assert by_hand.role == Role.TEACHER

    superuser = UserFactory(role=Role.ADMIN, role_source=RoleSource.IDP, is_superuser=True)
    signin_groups_apply(user=superuser, groups=[])
    superuser.refresh_from_db()
    assert superuser.role == Role.ADMIN


def test_an_admin_changing_the_role_in_the_console_takes_it_over(client):
    admin = UserFactory(username="root", role=Role.ADMIN)
    person = UserFactory(username="pat", role=Role.STUDENT, role_source=RoleSource.IDP)
    client.force_login(admin)
    response = client.post(
        f"/admin/accounts/user/{person.pk}/change/",
        {
            "username": "pat",
            "role": "teacher",
            "role_source": "idp",
            "first_name": "",
            "last_name": "",
            "email": "",
            "is_active": "on",
            "last_login_0": "",
            "last_login_1": "",
            "quota-TOTAL_FORMS": "0",
            "quota-INITIAL_FORMS": "0",
            "enrollments-TOTAL_FORMS": "0",
            "enrollments-INITIAL_FORMS": "0",
            "external_identities-TOTAL_FORMS": "0",
            "external_identities-INITIAL_FORMS": "0",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    person.refresh_from_db()
    assert (person.role, person.role_source) == (Role.TEACHER, RoleSource.MANUAL)


def test_a_place_the_groups_gave_and_an_admin_made_assistant_stays_at_the_next_sign_ins(client):
    """Whoever changes a place owns it: the groups gave pat a student's place, an admin made it an assistant's in
    the console; the next sign-ins, whether their groups name the course or not, leave the assistant's place be."""
    pat = UserFactory(username="pat", role=Role.STUDENT, role_source=RoleSource.IDP)
    dl101 = CourseFactory(code="DL-101", term="2026W")
    signin_groups_apply(user=pat, groups=["course-dl101-2026w-students"])
    place = Enrollment.objects.get(user=pat, course=dl101)
    assert place.source == MembershipSource.IDP
    client.force_login(UserFactory(username="root", role=Role.ADMIN))
    response = client.post(
        "/admin/accounts/enrollment/", {"action": "make_assistants", "_selected_action": [place.pk]}, follow=True
    )
    assert "1 enrollments changed: now teaching assistants" in response.content.decode()

    for groups in (["course-dl101-2026w-students"], []):
        changes = signin_groups_apply(user=pat, groups=groups)
        assert changes.removed == [] and changes.added == []
        assert list(pat.enrollments.values_list("course__code", "role", "source")) == [
            ("DL-101", CourseRole.ASSISTANT, MembershipSource.MANUAL)
        ]


def test_a_course_part_the_portal_has_not_is_skipped(caplog):
    user = UserFactory(role_source=RoleSource.IDP)
    CourseFactory(code="DL-101", term="2026W")
    with caplog.at_level("INFO", logger="portal.signin"):
        changes = signin_groups_apply(user=user, groups=["course-dl101-2026w-alumni"])
    assert changes.added == [] and not Enrollment.objects.exists()
    assert "names a course part the portal has not ('alumni')" in caplog.text


@pytest.mark.django_db(transaction=True)
def test_two_first_sign_ins_at_once_make_one_account_and_two_people_two():
    """Two tabs signing the same new person in at once, and two new people proposing the same name at once."""
    import threading

    from django.db import connection

    from accounts.models import ExternalIdentity, User
    from accounts.signin.services import external_identity_sign_in

    def race(subjects):
        barrier = threading.Barrier(len(subjects))
        results, errors = [], []

        def sign_in(subject):
            try:
                barrier.wait(10)
                user = external_identity_sign_in(
                    kind="oidc", issuer="https://idp.example", subject=subject, username="twin", groups=[]
                )
                results.append(user.pk)
            except Exception as exc:
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=sign_in, args=(subject,)) for subject in subjects]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors, errors
        return results

    same = race(["s-1", "s-1"])
    assert len(set(same)) == 1 and ExternalIdentity.objects.filter(subject="s-1").count() == 1
    others = race(["s-2", "s-3"])
    assert len(set(others)) == 2
    assert set(User.objects.values_list("username", flat=True)) == {"twin", "twin-2", "twin-3"}
