"""GET /api/v1/usage/ and GET /api/v1/usage/efficiency/: JSON, or CSV that streams (`Accept: text/csv` or
`?format=csv`). Thin: read the request (labs.usage.params), ask the selectors, write the answer."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, inline_serializer
from rest_framework import renderers, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from labs.usage import accounting, csvstream
from labs.usage.params import ENTRY, MOMENT_PATTERN, read_query, read_scope_and_window
from labs.usage.selectors import efficiency_in_scope, usage_entries, usage_entries_csv, usage_report

EFFICIENCY_LIMIT = 5000


class CsvRenderer(renderers.BaseRenderer):
    """Chosen by `Accept: text/csv` or `?format=csv`; the views stream the CSV themselves."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return renderers.JSONRenderer().render(data)


class _UsageView(APIView):
    renderer_classes = [renderers.JSONRenderer, CsvRenderer]

    def wants_csv(self) -> bool:
        return getattr(self.request.accepted_renderer, "format", "") == "csv"

    def handle_exception(self, exc):
        # Errors answer in JSON (the API's error format) even when CSV was asked for.
        self.request.accepted_renderer = renderers.JSONRenderer()
        self.request.accepted_media_type = "application/json"
        return super().handle_exception(exc)


WINDOW_PARAMETERS = [
    OpenApiParameter(
        "from",
        OpenApiTypes.STR,
        pattern=MOMENT_PATTERN,
        allow_blank=False,
        description="ISO time (or a date, in the lab's zone); default 8 weeks ago.",
    ),
    OpenApiParameter(
        "to",
        OpenApiTypes.STR,
        pattern=MOMENT_PATTERN,
        allow_blank=False,
        description="ISO time (or a date, included); default now. Span <= 2 years.",
    ),
    OpenApiParameter("course", OpenApiTypes.STR, description="A course code (its teachers and admins)."),
    OpenApiParameter("user", OpenApiTypes.STR, description="A username (yourself; teachers their students)."),
    OpenApiParameter("format", OpenApiTypes.STR, enum=["json", "csv"], description="csv streams CSV."),
]


class UsageReportRowOut(serializers.Serializer):
    key = serializers.CharField(help_text="The username, course code, node, kind, or the bucket's first local day.")
    gpu_hours = serializers.FloatField()
    gpu_seconds = serializers.FloatField()
    starts_at = serializers.DateTimeField(required=False, help_text="Time buckets: where the bucket starts.")
    ends_at = serializers.DateTimeField(required=False)


UsageReportOut = inline_serializer(
    "UsageReport",
    fields={
        "from": serializers.DateTimeField(),
        "to": serializers.DateTimeField(),
        "until": serializers.DateTimeField(help_text="min(to, now): open entries count up to now."),
        "group_by": serializers.CharField(),
        "kinds": serializers.ListField(child=serializers.CharField()),
        "total_gpu_hours": serializers.FloatField(),
        "total_gpu_seconds": serializers.FloatField(),
        "rows": UsageReportRowOut(many=True),
    },
)


def row_out(row: accounting.UsageRow) -> dict:
    out = {"key": row.key, "gpu_hours": round(row.gpu_hours, 6), "gpu_seconds": round(row.gpu_seconds, 3)}
    if row.starts_at is not None:
        out["starts_at"] = row.starts_at.isoformat()
        out["ends_at"] = row.ends_at.isoformat()
    return out


def report_body(query, rows: list[accounting.UsageRow]) -> dict:
    total = sum(row.gpu_seconds for row in rows)
    return {
        "from": query.window.start.isoformat(),
        "to": query.window.end.isoformat(),
        "until": query.window.until.isoformat(),
        "group_by": query.group_by,
        "kinds": list(query.kinds),
        "total_gpu_hours": round(total / 3600, 6),
        "total_gpu_seconds": round(total, 3),
        "rows": [row_out(row) for row in rows],
    }


USAGE_HEADER = ("key", "gpu_hours", "gpu_seconds", "starts_at", "ends_at")
ENTRY_HEADER = ("id", "user", "course", "kind", "ref", "node", "gpu_index", "share", "starts_at", "ends_at")


def usage_csv(request, query):
    if query.group_by == ENTRY:
        raw = usage_entries_csv(query.scope, query.window, kinds=query.kinds)
        pages = usage_entries(query.scope, query.window, kinds=query.kinds) if raw is None else None
        return csvstream.csv_response(request, filename="usage-entries.csv", header=ENTRY_HEADER, pages=pages, raw=raw)
    rows = usage_report(query.scope, query.window, query.group_by, kinds=query.kinds)
    page = [(r.key, round(r.gpu_hours, 6), round(r.gpu_seconds, 3), r.starts_at or "", r.ends_at or "") for r in rows]
    filename = f"usage-by-{query.group_by}.csv"
    return csvstream.csv_response(request, filename=filename, header=USAGE_HEADER, pages=csvstream.one_page(page))


class UsageApi(_UsageView):
    @extend_schema(
        parameters=[
            *WINDOW_PARAMETERS,
            OpenApiParameter(
                "group_by",
                OpenApiTypes.STR,
                enum=[*accounting.GROUPS, ENTRY],
                description="Default user. `entry` (CSV only): every ledger entry of the window.",
            ),
            OpenApiParameter(
                "kind",
                OpenApiTypes.STR,
                enum=["notebook,job", "notebook", "job", "reservation", "notebook,job,reservation"],
                description="Comma-separated kinds; default notebook,job.",
            ),
        ],
        responses={200: UsageReportOut, (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
        summary="GPU-hours from the ledger, grouped, for a window",
    )
    def get(self, request):
        csv_wanted = self.wants_csv()
        query = read_query(request.query_params, viewer=request.user, entries_allowed=csv_wanted)
        if csv_wanted:
            return usage_csv(request, query)
        return Response(report_body(query, usage_report(query.scope, query.window, query.group_by, kinds=query.kinds)))


class HolderEfficiencyOut(serializers.Serializer):
    holder = serializers.CharField(source="holder_ref")
    holder_kind = serializers.CharField()
    user = serializers.CharField()
    course = serializers.CharField(allow_null=True)
    node = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    gpu_hours = serializers.FloatField()
    mean_util_pct = serializers.FloatField(allow_null=True)
    p95_util_pct = serializers.FloatField(allow_null=True)
    peak_mem_mb = serializers.FloatField(allow_null=True)
    energy_wh = serializers.FloatField(allow_null=True)
    idle_gpu_hours = serializers.FloatField()
    telemetry_minutes = serializers.IntegerField()
    computed_at = serializers.DateTimeField()


EFFICIENCY_FIELDS = [name for name in HolderEfficiencyOut().fields]


def efficiency_record(row) -> dict:
    return {
        "holder": row.holder_ref,
        "holder_kind": row.holder_kind,
        "user": row.user.username,
        "course": row.course.code if row.course_id else None,
        "node": row.node.name if row.node_id else None,
        "started_at": row.started_at.isoformat(),
        "ended_at": row.ended_at.isoformat() if row.ended_at else None,
        "gpu_hours": round(row.gpu_hours, 6),
        "mean_util_pct": row.mean_util_pct,
        "p95_util_pct": row.p95_util_pct,
        "peak_mem_mb": row.peak_mem_mb,
        "energy_wh": row.energy_wh,
        "idle_gpu_hours": round(row.idle_gpu_hours, 6),
        "telemetry_minutes": row.telemetry_minutes,
        "computed_at": row.computed_at.isoformat(),
    }


class EfficiencyApi(_UsageView):
    @extend_schema(
        parameters=WINDOW_PARAMETERS,
        responses={200: HolderEfficiencyOut(many=True), (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
        summary="How well each job attempt and notebook session in the window used its GPUs (newest first)",
    )
    def get(self, request):
        scope, window = read_scope_and_window(request.query_params, viewer=request.user)
        rows = [efficiency_record(row) for row in efficiency_in_scope(scope, window)[:EFFICIENCY_LIMIT]]
        if self.wants_csv():
            page = [[row[name] for name in EFFICIENCY_FIELDS] for row in rows]
            return csvstream.csv_response(
                request, filename="efficiency.csv", header=EFFICIENCY_FIELDS, pages=csvstream.one_page(page)
            )
        return Response(rows)
