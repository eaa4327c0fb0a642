"""The course-work API (v1): a course's material and assignments (list, publish), an assignment's submissions
(teachers, assistants, admins; students hand in with POST), one snapshot's archive. Thin.

Publishing takes JSON for a git source ({title, source: "git", git_url, git_ref?, release_at, due_at?}) or a
multipart form with the course folder as a zip in `archive` for a folder source.
"""

from __future__ import annotations

from django.http import FileResponse
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from labs.coursework.links import nbgitpuller_link
from labs.coursework.selectors import (
    assignment_for_staff,
    assignment_for_student,
    course_readable_by,
    course_writable_by,
    handouts_of,
    store_dir,
    submission_for,
    submission_rows,
)
from labs.coursework.services import handout_publish, submission_hand_in
from labs.models import HandoutKind, HandoutSource


class HandoutIn(serializers.Serializer):
    title = serializers.CharField(max_length=120)
    source = serializers.ChoiceField(choices=HandoutSource.choices)
    git_url = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")
    git_ref = serializers.CharField(max_length=100, required=False, allow_blank=True, default="")
    archive = serializers.FileField(required=False, help_text="The course folder as a zip (source: folder).")
    release_at = serializers.DateTimeField()
    due_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class HandoutOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    course = serializers.CharField(source="course.code")
    kind = serializers.CharField()
    title = serializers.CharField()
    folder = serializers.SerializerMethodField(help_text="Where it is in the notebook home.")
    source = serializers.CharField()
    git_url = serializers.CharField()
    git_ref = serializers.CharField()
    release_at = serializers.DateTimeField()
    due_at = serializers.DateTimeField(allow_null=True)
    released = serializers.SerializerMethodField()
    files = serializers.IntegerField()
    size_bytes = serializers.IntegerField()
    nbgitpuller_url = serializers.SerializerMethodField(help_text="For a git source: the hub's git-pull link.")

    def get_folder(self, handout) -> str:
        return f"{handout.course.code}/{handout.slug}"

    def get_released(self, handout) -> bool:
        return handout.released_at is not None

    def get_nbgitpuller_url(self, handout) -> str | None:
        return nbgitpuller_link(handout)


class SubmissionOut(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    handed_in = serializers.SerializerMethodField()
    taken_at = serializers.SerializerMethodField()
    late = serializers.SerializerMethodField()
    trigger = serializers.SerializerMethodField()
    sha256 = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()
    size_bytes = serializers.SerializerMethodField()
    due_at = serializers.DateTimeField(allow_null=True)
    extended = serializers.BooleanField()
    snapshots = serializers.IntegerField(source="count")
    archive_url = serializers.SerializerMethodField()

    def _sub(self, row):
        return row["submission"]

    def get_handed_in(self, row) -> bool:
        return row["submission"] is not None

    def get_taken_at(self, row) -> str | None:
        sub = row["submission"]
        return serializers.DateTimeField().to_representation(sub.taken_at) if sub else None

    def get_late(self, row) -> bool:
        return bool(row["submission"] and row["submission"].late)

    def get_trigger(self, row) -> str | None:
        return row["submission"].trigger if row["submission"] else None

    def get_sha256(self, row) -> str | None:
        return row["submission"].sha256 if row["submission"] else None

    def get_files(self, row) -> int:
        return row["submission"].files if row["submission"] else 0

    def get_size_bytes(self, row) -> int:
        return row["submission"].size_bytes if row["submission"] else 0

    def get_archive_url(self, row) -> str | None:
        sub = row["submission"]
        if sub is None:
            return None
        return reverse("api:assignment-archive", args=[sub.handout_id, row["user"].username])


class HandInOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    taken_at = serializers.DateTimeField()
    late = serializers.BooleanField()
    sha256 = serializers.CharField()
    files = serializers.IntegerField()
    size_bytes = serializers.IntegerField()
    skipped = serializers.CharField()


def _handouts_api(kind: str):
    class HandoutListApi(APIView):
        parser_classes = [*api_settings.DEFAULT_PARSER_CLASSES, MultiPartParser]  # the API's JSON, or a zip

        @extend_schema(responses=HandoutOut(many=True), summary=f"A course's {kind}s", operation_id=f"{kind}_list")
        def get(self, request, code: str):
            course = course_readable_by(request.user, code)
            return Response(HandoutOut(handouts_of(request.user, course, kind), many=True).data)

        @extend_schema(
            request=HandoutIn, responses={201: HandoutOut}, summary=f"Publish {kind}", operation_id=f"{kind}_create"
        )
        def post(self, request, code: str):
            course = course_writable_by(request.user, code)
            data = HandoutIn(data=request.data)
            data.is_valid(raise_exception=True)
            values = data.validated_data
            handout = handout_publish(
                user=request.user,
                course=course,
                kind=kind,
                title=values["title"],
                source=values["source"],
                git_url=values["git_url"],
                git_ref=values["git_ref"],
                upload=values.get("archive"),
                release_at=values["release_at"],
                due_at=values["due_at"],
            )
            return Response(HandoutOut(handout).data, status=status.HTTP_201_CREATED)

    HandoutListApi.__name__ = f"{kind.title()}ListApi"
    return HandoutListApi


MaterialListApi = _handouts_api(HandoutKind.MATERIAL)
AssignmentListApi = _handouts_api(HandoutKind.ASSIGNMENT)


class SubmissionListApi(APIView):
    @extend_schema(responses=SubmissionOut(many=True), summary="Who handed in what and when (course staff)")
    def get(self, request, assignment_id: int):
        handout = assignment_for_staff(request.user, assignment_id)
        return Response(SubmissionOut(submission_rows(handout), many=True).data)

    @extend_schema(request=None, responses={201: HandInOut}, summary="Hand in my assignment folder now")
    def post(self, request, assignment_id: int):
        handout = assignment_for_student(request.user, assignment_id)
        submission = submission_hand_in(user=request.user, handout=handout)
        return Response(HandInOut(submission).data, status=status.HTTP_201_CREATED)


class SubmissionArchiveApi(APIView):
    @extend_schema(
        responses={(200, "application/gzip"): OpenApiResponse(OpenApiTypes.BINARY)},
        summary="One student's latest snapshot (.tar.gz)",
    )
    def get(self, request, assignment_id: int, username: str):
        submission = submission_for(request.user, assignment_id, username)
        response = FileResponse(
            open(store_dir() / submission.path, "rb"),  # noqa: SIM115  (FileResponse closes it)
            as_attachment=True,
            filename=f"{submission.handout.slug}-{submission.user.username}.tar.gz",
            content_type="application/gzip",
        )
        response["X-Content-SHA256"] = submission.sha256
        return response
