"""The roster API (v1) of a course, for its teachers and admins: export (CSV), preview an import, import. Thin.

The roster travels as CSV text inside JSON (`{"csv": "username,email,role\n..."}`), the format the export gives and
the course's roster page reads (accounts/rosters.py).
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.models import CourseRole
from accounts.rosters import roster_commit, roster_export, roster_plan
from accounts.selectors import roster_course_for


class RosterIn(serializers.Serializer):
    csv = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        max_length=settings.ROSTER_MAX_BYTES,
        help_text="The roster file: a header line (username required; email, first_name, last_name, role), then one "
        "person per line.",
    )


class RosterImportIn(RosterIn):
    fingerprint = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The preview's fingerprint: the import is refused (409) if the course changed since that preview.",
    )


class RosterPersonOut(serializers.Serializer):
    line = serializers.IntegerField(help_text="Its line in the file.")
    username = serializers.CharField()
    email = serializers.CharField(allow_blank=True)
    role = serializers.ChoiceField(choices=CourseRole.choices, help_text="Role in the course.")


class RosterAskedOut(RosterPersonOut):
    waiting = serializers.BooleanField(help_text="Asked by an earlier import and still to answer: not asked again.")


class RosterWithdrawnOut(serializers.Serializer):
    username = serializers.CharField()


class RosterRemovedOut(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.ChoiceField(choices=CourseRole.choices, help_text="Role in the course.")


class RosterProblemOut(serializers.Serializer):
    line = serializers.IntegerField()
    reason = serializers.CharField()


class RosterPlanOut(serializers.Serializer):
    course = serializers.CharField()
    fingerprint = serializers.CharField(help_text="Send it with the import to be sure it does what this preview said.")
    add = RosterPersonOut(
        many=True, help_text="People with an account who are enrolled at once (an admin's import only)."
    )
    invite = RosterPersonOut(
        many=True, help_text="People not known yet: enrolled at once, with a new account and an invitation e-mail."
    )
    consent = RosterAskedOut(
        many=True,
        help_text="People with an account (a teacher's import): asked to join by e-mail and on their dashboard; "
        "enrolled only when they accept, nobody when they decline or let it expire.",
    )
    change = RosterPersonOut(many=True, help_text="People whose role in the course changes.")
    keep = RosterPersonOut(many=True, help_text="People already in the course as the file says.")
    remove = RosterRemovedOut(many=True, help_text="People in the course now and not in the file.")
    withdraw = RosterWithdrawnOut(
        many=True, help_text="People asked by an earlier import who are not asked now: the request is withdrawn."
    )
    problems = RosterProblemOut(many=True, help_text="Bad lines; an import with any does nothing.")


class RosterApi(APIView):
    @extend_schema(
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The roster as CSV.")},
        summary="Export a course's roster (CSV)",
    )
    def get(self, request, code: str):
        course = roster_course_for(request.user, code)
        response = HttpResponse(roster_export(course=course), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{course.code}-roster.csv"'
        return response

    @extend_schema(
        request=RosterImportIn,
        responses=RosterPlanOut,
        summary="Import a course's roster: all of it in one transaction, or nothing (400 names each bad line)",
    )
    def post(self, request, code: str):
        course = roster_course_for(request.user, code)
        data = RosterImportIn(data=request.data)
        data.is_valid(raise_exception=True)
        plan = roster_commit(
            course=course,
            by=request.user,
            data=data.validated_data["csv"],
            fingerprint=data.validated_data.get("fingerprint", ""),
            link_base=request.build_absolute_uri("/").rstrip("/"),
        )
        return Response(plan.as_dict())


class RosterPreviewApi(APIView):
    @extend_schema(
        request=RosterIn,
        responses=RosterPlanOut,
        summary="Preview a roster import: who would be enrolled at once, who asked to join (enrolled when they "
        "accept), changed and removed, and the bad lines",
    )
    def post(self, request, code: str):
        course = roster_course_for(request.user, code)
        data = RosterIn(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(roster_plan(course=course, data=data.validated_data["csv"], by=request.user).as_dict())
