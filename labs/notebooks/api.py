"""The notebooks API (v1): the profiles I may start, and my notebooks: start, list, read, stop, extend. Thin."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from labs.models import NotebookStatus
from labs.notebooks.selectors import notebook_for, notebooks_visible_to, profiles_startable, queue_positions
from labs.notebooks.services import notebook_extend, notebook_request, notebook_stop


class ProfileOut(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    image = serializers.CharField()
    gpu_share = serializers.FloatField(help_text="Share of one RTX 4090 (1 = the whole GPU).")
    gpu_mem_mb = serializers.IntegerField(allow_null=True)
    cpu = serializers.FloatField()
    memory_gb = serializers.FloatField()
    max_session_s = serializers.SerializerMethodField()
    courses = serializers.SerializerMethodField()

    def get_max_session_s(self, profile) -> int:
        return int(profile.max_session_h * 3600)

    def get_courses(self, profile) -> list[str]:
        return sorted(course.code for course in profile.courses.all())


class NotebookIn(serializers.Serializer):
    profile = serializers.CharField(max_length=40, help_text="A slug from GET /api/v1/profiles/.")


class NotebookOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    status = serializers.ChoiceField(choices=NotebookStatus.choices)
    position = serializers.SerializerMethodField(help_text="Place in the queue (1 = next), while queued.")
    url = serializers.SerializerMethodField(help_text="Where it opens, through the hub's proxy, once ready.")
    reason = serializers.CharField(help_text="Why it waits, what it is doing, or why it ended.")
    profile = serializers.CharField(source="profile.slug")
    profile_name = serializers.CharField(source="profile.name")
    gpu_share = serializers.FloatField(source="profile.gpu_share")
    owner = serializers.CharField(source="user.username")
    course = serializers.CharField(source="course.code", allow_null=True, default=None)
    node = serializers.CharField()
    requested_at = serializers.DateTimeField()
    ready_at = serializers.DateTimeField(allow_null=True)
    ends_at = serializers.DateTimeField(allow_null=True)
    must_end_by = serializers.DateTimeField(allow_null=True)
    stopped_at = serializers.DateTimeField(allow_null=True)

    def get_position(self, session) -> int | None:
        if session.status != NotebookStatus.QUEUED:
            return None
        positions = self.context.get("positions")
        if positions is None:
            positions = queue_positions([session])
        return positions.get(session.pk)

    def get_url(self, session) -> str | None:
        return session.url if session.status == NotebookStatus.READY and session.url else None


class NotebookListQuery(serializers.Serializer):
    status = serializers.ChoiceField(choices=NotebookStatus.choices, required=False, allow_blank=True)  # blank: all
    mine = serializers.BooleanField(required=False, default=False)
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=500)


class ProfileListApi(APIView):
    @extend_schema(responses=ProfileOut(many=True), summary="The notebook profiles I may start")
    def get(self, request):
        return Response(ProfileOut(profiles_startable(request.user), many=True).data)


class NotebookListApi(APIView):
    @extend_schema(parameters=[NotebookListQuery], responses=NotebookOut(many=True), summary="Notebooks I may see")
    def get(self, request):
        query = NotebookListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        sessions = notebooks_visible_to(request.user)
        if query.validated_data.get("status"):
            sessions = sessions.filter(status=query.validated_data["status"])
        if query.validated_data["mine"]:
            sessions = sessions.filter(user=request.user)
        rows = list(sessions[: query.validated_data["limit"]])
        positions = queue_positions(rows) if any(s.status == NotebookStatus.QUEUED for s in rows) else {}
        return Response(NotebookOut(rows, many=True, context={"positions": positions}).data)

    @extend_schema(
        request=NotebookIn,
        responses={202: NotebookOut},
        summary="Start a notebook: queued at once, then starting and ready by itself",
    )
    def post(self, request):
        data = NotebookIn(data=request.data)
        data.is_valid(raise_exception=True)
        session = notebook_request(user=request.user, profile=data.validated_data["profile"])
        session = notebook_for(request.user, session.pk)  # as it is after the commit (the pass may have moved it)
        return Response(NotebookOut(session).data, status=status.HTTP_202_ACCEPTED)


class NotebookDetailApi(APIView):
    @extend_schema(responses=NotebookOut, summary="One notebook")
    def get(self, request, notebook_id: int):
        return Response(NotebookOut(notebook_for(request.user, notebook_id)).data)

    @extend_schema(request=None, responses={202: NotebookOut}, summary="Stop a notebook (or take it out of the queue)")
    def delete(self, request, notebook_id: int):
        session = notebook_stop(user=request.user, session=notebook_for(request.user, notebook_id))
        return Response(NotebookOut(notebook_for(request.user, session.pk)).data, status=status.HTTP_202_ACCEPTED)


class NotebookExtendApi(APIView):
    @extend_schema(request=None, responses=NotebookOut, summary="Keep a running notebook: reset idle, add time")
    def post(self, request, notebook_id: int):
        session = notebook_extend(user=request.user, session=notebook_for(request.user, notebook_id))
        return Response(NotebookOut(notebook_for(request.user, session.pk)).data)
