"""The job queue's API (v1): submit, list, read, cancel, logs, and the "will it start now?" dry run. Thin."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.credentials import Credential, credential_of_request, credentials_ended
from accounts.errors import BackendError, PortalError
from jobs.backends.base import LogPage
from jobs.log_follow import Follow, after_view, follow_log_sync
from jobs.models import FINISHED_STATES, Job, JobState, PriorityClass
from jobs.selectors import job_for, jobs_visible_to
from jobs.services import job_cancel, job_preview, job_submit
from jobs.services.dispatch import job_logs


class BackendUnavailable(PortalError):
    status = 503
    code = "backend_unavailable"


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class _StringListJson(serializers.JSONField):
    """JSON read as it comes (the service names what is wrong with it); documented as the list it must be."""


@extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
class _StringMapJson(serializers.JSONField):
    """JSON read as it comes; documented as the NAME: value object it must be."""


@extend_schema_field({"type": "object", "additionalProperties": {}})
class _AnyMapJson(serializers.JSONField):
    """JSON read as it comes; documented as the NAME: value object it must be (values of the parameters' types)."""


class JobIn(serializers.Serializer):
    """Types only; every rule (allow-list, argv, quotas, reservations) is the service's, for pages and API alike."""

    name = serializers.CharField(
        max_length=200, allow_blank=True, required=False, default="", help_text="From a template: its name if blank."
    )
    image = serializers.CharField(max_length=300, allow_blank=True, required=False, default="")
    command = _StringListJson(
        required=False,
        default=None,
        help_text='argv, e.g. ["python", "train.py", "--epochs", "3"]; never a string. Or give `script`.',
    )
    script = serializers.CharField(
        required=False,
        default=None,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Instead of command: the text of a script, run as a file by the image's /bin/sh.",
    )
    template = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Instead of command or script: a job template of one of your courses (it gives image, program and"
        " sizes).",
    )
    parameters = _AnyMapJson(
        required=False, default=None, help_text='With template: NAME: value for its parameters, e.g. {"EPOCHS": 3}.'
    )
    gpus = serializers.IntegerField(required=False, allow_null=True, default=None, help_text="GPUs per node.")
    gpu_share = serializers.FloatField(
        required=False,
        default=None,
        allow_null=True,
        help_text="A part of one GPU (e.g. 0.25, 0.5; 1 GPU on 1 node) where the lab shares GPUs; 1: whole GPUs.",
    )
    scratch = serializers.CharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=32,
        help_text="Node-local scratch at /scratch, e.g. 50Gi.",
    )
    bulk = serializers.CharField(
        required=False, default="", allow_blank=True, max_length=32, help_text="Bulk storage at /bulk, e.g. 200Gi."
    )
    nodes = serializers.IntegerField(required=False, allow_null=True, default=None)
    max_runtime_s = serializers.IntegerField(required=False, allow_null=True, default=None)
    priority = serializers.ChoiceField(choices=PriorityClass.choices, required=False, default=PriorityClass.NORMAL)
    reservation = serializers.IntegerField(required=False, allow_null=True, default=None)
    env = _StringMapJson(required=False, default=dict)
    datasets = _StringListJson(required=False, default=list)
    course = serializers.CharField(required=False, allow_null=True, allow_blank=True, default=None, max_length=32)
    idle_ok_reason = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        max_length=300,
        help_text="Why this job may hold its GPUs idle (exempts it from the idle-GPU rule); empty: not exempt.",
    )


class JobEventOut(serializers.Serializer):
    at = serializers.DateTimeField()
    from_state = serializers.CharField()
    to_state = serializers.CharField()
    attempt = serializers.IntegerField()
    reason = serializers.CharField()


class JobOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    status = serializers.CharField(
        source="state", help_text="queued, starting, running, succeeded, failed or cancelled"
    )
    stopping = serializers.BooleanField(help_text="A cancel or preemption was asked for and is under way.")
    owner = serializers.CharField(source="owner.username")
    course = serializers.CharField(source="course.code", allow_null=True, default=None)
    image = serializers.CharField()
    command = serializers.ListField(child=serializers.CharField(), help_text="[] for a job given as a script.")
    script = serializers.CharField(help_text="The script, exactly as given; empty for a job given as a command.")
    env = serializers.DictField(child=serializers.CharField())
    gpus = serializers.IntegerField(source="gpus_per_node")
    gpu_share = serializers.FloatField()
    scratch = serializers.CharField()
    bulk = serializers.CharField()
    nodes = serializers.IntegerField()
    max_runtime_s = serializers.IntegerField()
    priority = serializers.CharField()
    reservation = serializers.IntegerField(source="reservation_id", allow_null=True)
    datasets = serializers.ListField(child=serializers.CharField())
    idle_ok_reason = serializers.CharField()
    resumed_from = serializers.IntegerField(source="resumed_from_id", allow_null=True)
    attempt = serializers.IntegerField()
    node_names = serializers.ListField(child=serializers.CharField())
    position = serializers.SerializerMethodField()
    reason = serializers.SerializerMethodField(help_text="Why it waits (while queued), or why it stopped.")
    estimated_start = serializers.SerializerMethodField()
    submitted_at = serializers.DateTimeField()
    queued_since = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    running_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    exit_code = serializers.IntegerField(allow_null=True)
    message = serializers.CharField()

    def get_position(self, job) -> int | None:
        return job.position if job.state == JobState.QUEUED else None

    def get_reason(self, job) -> str:
        if job.state == JobState.QUEUED:
            return job.reason
        if job.stop_requested_at is not None:
            return f"stopping: {job.stop_note}"
        if job.state in FINISHED_STATES:
            return job.message
        return ""

    def get_estimated_start(self, job) -> str | None:
        if job.state != JobState.QUEUED or job.estimated_start is None:
            return None
        return serializers.DateTimeField().to_representation(job.estimated_start)


class JobDetailOut(JobOut):
    events = JobEventOut(many=True, source="events.all")


class JobListQuery(serializers.Serializer):
    # Blank is read as absent (as DRF reads any optional query parameter), so the schema says "" is allowed.
    status = serializers.ChoiceField(
        choices=JobState.choices, required=False, allow_blank=True, help_text="Only jobs in this state."
    )
    mine = serializers.BooleanField(required=False, default=False)
    limit = serializers.IntegerField(required=False, default=100, min_value=1, max_value=500)
    before = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=2**53,
        help_text="Only jobs submitted before this one (the next page: the last id of this page).",
    )


# The names only: JobIn().fields would deep-copy every field of the serializer on each submission.
_SUBMIT_FIELDS = tuple(JobIn._declared_fields)


def _submit_fields(data: dict) -> dict:
    return {name: data.get(name) for name in _SUBMIT_FIELDS}


class JobListApi(APIView):
    @extend_schema(parameters=[JobListQuery], responses=JobOut(many=True), summary="Jobs I may see, newest first")
    def get(self, request):
        query = JobListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        jobs = jobs_visible_to(request.user)
        if query.validated_data.get("status"):
            jobs = jobs.filter(state=query.validated_data["status"])
        if query.validated_data["mine"]:
            jobs = jobs.filter(owner=request.user)
        if query.validated_data.get("before"):
            jobs = jobs.filter(pk__lt=query.validated_data["before"])
        # Newest first by id, the key `before` pages on: two submits that commit in the other order than their
        # submitted_at would otherwise fall between two pages.
        return Response(JobOut(jobs.order_by("-pk")[: query.validated_data["limit"]], many=True).data)

    @extend_schema(request=JobIn, responses={201: JobOut}, summary="Submit a training job to the queue")
    def post(self, request):
        data = JobIn(data=request.data)
        data.is_valid(raise_exception=True)
        job = job_submit(user=request.user, **_submit_fields(data.validated_data))
        return Response(JobOut(job).data, status=status.HTTP_201_CREATED)


class PreviewOut(serializers.Serializer):
    starts_now = serializers.BooleanField()
    sentence = serializers.CharField()
    position = serializers.IntegerField(allow_null=True)
    estimated_start = serializers.DateTimeField(allow_null=True)
    node_names = serializers.ListField(child=serializers.CharField())
    help = serializers.CharField(help_text="Where the limit that says no is explained (/help/#limit-…); or empty.")


class JobPreviewApi(APIView):
    @extend_schema(request=JobIn, responses=PreviewOut, summary="Will it start now? A dry run; nothing is queued")
    def post(self, request):
        data = JobIn(data=request.data)
        data.is_valid(raise_exception=True)
        answer = job_preview(user=request.user, **_submit_fields(data.validated_data))
        return Response(PreviewOut(answer).data)


class JobDetailApi(APIView):
    @extend_schema(responses=JobDetailOut, summary="One job, with its events")
    def get(self, request, job_id: int):
        return Response(JobDetailOut(job_for(request.user, job_id)).data)


class JobCancelApi(APIView):
    @extend_schema(request=None, responses=JobDetailOut, summary="Cancel a job (stopping it if it runs)")
    def post(self, request, job_id: int):
        job = job_cancel(user=request.user, job=job_for(request.user, job_id))
        return Response(JobDetailOut(Job.objects.get(pk=job.pk)).data)


class LogsQuery(serializers.Serializer):
    attempt = serializers.IntegerField(required=False, min_value=1)
    rank = serializers.IntegerField(required=False, default=0, min_value=0, max_value=999)
    tail = serializers.IntegerField(required=False, min_value=0, max_value=100_000, help_text="The last N lines.")
    offset = serializers.IntegerField(
        required=False, min_value=0, max_value=2**53, help_text="Read from this byte on (X-Log-End of the last page)."
    )
    limit_bytes = serializers.IntegerField(
        required=False, min_value=1, max_value=2**53, help_text="At most this many bytes (never above the cap)."
    )
    follow = serializers.BooleanField(
        required=False, default=False, help_text="Stream the log as it is written, until the attempt is over."
    )
    since = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=2**53,
        help_text="With follow: start at this byte (the since of the last stream + the bytes it gave).",
    )

    def validate(self, attrs):
        if "tail" in attrs and "offset" in attrs:
            raise serializers.ValidationError({"offset": [_("Give either tail (lines) or offset (bytes), not both.")]})
        if attrs.get("follow") and ({"tail", "offset", "limit_bytes"} & attrs.keys()):
            raise serializers.ValidationError(
                {"follow": [_("A followed log starts at since; not with tail or offset.")]}
            )
        if "since" in attrs and not attrs.get("follow"):
            raise serializers.ValidationError({"since": [_("since goes with follow=1; page with offset otherwise.")]})
        return attrs


def _log_headers(response: HttpResponse, page: LogPage) -> HttpResponse:
    response["X-Log-Truncated"] = "true" if page.truncated else "false"
    response["X-Log-Max-Bytes"] = str(settings.JOBS_LOG_RESPONSE_MAX_BYTES)
    for header, value in (("X-Log-Size", page.size), ("X-Log-Start", page.start), ("X-Log-End", page.end)):
        if value is not None:
            response[header] = str(value)
    return response


def log_request(user, job_id: int, params) -> tuple[Job, dict, int]:
    """The job (if `user` may see it), the checked query and the attempt asked for; DRF errors otherwise.

    Shared by this view and the ASGI log follower (portal/log_follow_app.py), so both answer alike."""
    job = job_for(user, job_id)
    query = LogsQuery(data=params)
    query.is_valid(raise_exception=True)
    values = query.validated_data
    attempt = values.get("attempt") or job.attempt
    if attempt > job.attempt or values["rank"] >= job.nodes:
        field = "attempt" if attempt > job.attempt else "rank"
        raise serializers.ValidationError({field: [_("No such attempt or rank.")]})
    return job, values, attempt


def follow_headers(follow: Follow) -> dict[str, str]:
    return {
        "Content-Type": "text/plain; charset=utf-8",
        "X-Log-Start": str(follow.since),
        "X-Log-Attempt": str(follow.attempt),
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",  # a proxy in front passes each piece on as it comes
        "X-Content-Type-Options": "nosniff",
    }


def _follow_response(follow: Follow, credential: Credential | None) -> StreamingHttpResponse:
    """Under WSGI (and the test client); under ASGI portal/log_follow_app.py answers ?follow=1 before Django."""

    def still_holds() -> bool:  # the token or session the request came with, looked at again now and then
        return credential is not None and credential not in credentials_ended([credential])

    response = StreamingHttpResponse(follow_log_sync(follow, still_holds))
    for name, value in follow_headers(follow).items():
        response[name] = value
    after_view()
    return response


class JobLogsApi(APIView):
    @extend_schema(
        parameters=[LogsQuery],
        responses={(200, "text/plain"): str},
        summary="The output of one rank, a page at a time, or followed as it is written",
        description=(
            "At most JOBS_LOG_RESPONSE_MAX_BYTES (1 MiB by default) per answer: the end of the log, its last `tail` "
            "lines, or `limit_bytes` from byte `offset`. Headers: `X-Log-Truncated` (the cap cut what was asked), "
            "`X-Log-Size` (the whole log, when known), `X-Log-Start`/`X-Log-End` (where the bytes lie in it), "
            "`X-Log-Max-Bytes` (the cap).\n\n"
            "With `follow=1` the answer is a stream (chunked) of the log from byte `since` (0 by default) on, as the "
            "job writes it; it ends once the attempt is over and its log is read to the end (or after "
            "JOBS_LOG_FOLLOW_MAX_S, or once the token or session it was opened with ends: revoked, signed out "
            "everywhere, a new password; resuming then gets the 401 that says why). `X-Log-Start` says where it "
            "began: to resume, ask again with `since` = `X-Log-Start` + the bytes received."
        ),
    )
    def get(self, request, job_id: int):
        job, values, attempt = log_request(request.user, job_id, request.query_params)
        if values["follow"]:
            follow = Follow(job.pk, attempt, values["rank"], values.get("since", 0))
            return _follow_response(follow, credential_of_request(request))
        try:
            page = job_logs(
                job=job,
                attempt=attempt,
                rank=values["rank"],
                tail_lines=values.get("tail"),
                offset=values.get("offset"),
                limit_bytes=values.get("limit_bytes"),
            )
        except BackendError as exc:
            raise BackendUnavailable(f"The logs cannot be read right now: {exc}") from exc
        return _log_headers(HttpResponse(page.data, content_type="text/plain; charset=utf-8"), page)


__all__ = [
    "JobCancelApi",
    "JobDetailApi",
    "JobListApi",
    "JobLogsApi",
    "JobPreviewApi",
]
