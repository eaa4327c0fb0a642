"""GET /api/v1/audit/ (the audit trail: admins everything, teachers their courses'; CSV by `Accept: text/csv`) and
requests for more: GET|POST /api/v1/requests/, POST /api/v1/requests/{id}/decide/. Thin: parse, one call, answer."""

from __future__ import annotations

from itertools import islice

from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.audit_selectors import CSV_HEADER, audit_csv_rows, audit_entries, audit_filter_from, entry_out
from accounts.errors import InvalidInput, NotFound
from accounts.models import Course, MoreRequest, RequestKind
from accounts.more_requests import more_request_create, more_request_decide
from accounts.more_requests_selectors import may_decide, more_requests_visible_to
from labs.usage import csvstream
from labs.usage.api import _UsageView
from labs.usage.params import MOMENT_PATTERN

AUDIT_PAGE_MAX = 1000


def csv_pages(rows, size: int = 500):
    while page := list(islice(rows, size)):
        yield page


class AuditApi(_UsageView):
    @extend_schema(
        summary="The audit trail",
        parameters=[
            OpenApiParameter("actor", OpenApiTypes.STR, description="A username, or `system`."),
            OpenApiParameter("target", OpenApiTypes.STR, description="`type:id` (node:3) or words of its label."),
            OpenApiParameter("action", OpenApiTypes.STR, description="A code (quota.change) or its first part."),
            OpenApiParameter(
                "from",
                OpenApiTypes.STR,
                pattern=MOMENT_PATTERN,
                allow_blank=False,
                description="ISO time or date (inclusive).",
            ),
            OpenApiParameter(
                "to",
                OpenApiTypes.STR,
                pattern=MOMENT_PATTERN,
                allow_blank=False,
                description="ISO time or date (a date includes its day).",
            ),
            OpenApiParameter("limit", OpenApiTypes.INT, description=f"At most {AUDIT_PAGE_MAX} (JSON); CSV has all."),
        ],
        responses={200: OpenApiTypes.OBJECT, (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR)},
    )
    def get(self, request):
        rows = audit_entries(request.user, audit_filter_from(request.query_params, blank_ok=False))
        if self.wants_csv():
            return csvstream.csv_response(
                request._request, filename="audit.csv", header=CSV_HEADER, pages=csv_pages(audit_csv_rows(rows))
            )
        try:
            limit = min(max(int(request.query_params.get("limit", 200)), 1), AUDIT_PAGE_MAX)
        except ValueError:
            raise InvalidInput(_("Give limit as a whole number."), fields={"limit": _("A whole number.")}) from None
        entries = list(rows[: limit + 1])
        return Response({"entries": [entry_out(entry) for entry in entries[:limit]], "more": len(entries) > limit})


class MoreRequestIn(serializers.Serializer):
    kind = serializers.ChoiceField(choices=RequestKind.choices)
    amount = serializers.CharField(max_length=20, help_text="GPU-hours (a weekly quota for `quota`).")
    until = serializers.CharField(max_length=40, help_text="ISO time or date: when the override ends.")
    reason = serializers.CharField(max_length=500)
    course = serializers.CharField(max_length=32, required=False, allow_blank=True, allow_null=True)


class DecideIn(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "refuse"])
    amount = serializers.CharField(max_length=20, required=False, allow_blank=True, allow_null=True)
    until = serializers.CharField(max_length=40, required=False, allow_blank=True, allow_null=True)
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


def request_out(row: MoreRequest, viewer) -> dict:
    return {
        "id": row.pk,
        "user": row.user.username,
        "kind": row.kind,
        "amount": float(row.amount),
        "until": row.until.isoformat(),
        "reason": row.reason,
        "course": row.course.code if row.course_id else None,
        "status": row.status,
        "created_at": row.created_at.isoformat(),
        "decided_by": row.decided_by.username if row.decided_by_id else None,
        "decided_at": row.decided_at.isoformat() if row.decided_at else None,
        "decision_reason": row.decision_reason,
        "granted_amount": float(row.granted_amount) if row.granted_amount is not None else None,
        "granted_until": row.granted_until.isoformat() if row.granted_until else None,
        "may_decide": row.status == "pending" and may_decide(viewer, row),
    }


def _valid(serializer_class, data):
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        fields = {name: " ".join(str(m) for m in messages) for name, messages in serializer.errors.items()}
        raise InvalidInput(next(iter(fields.values())), fields=fields)
    return serializer.validated_data


class MoreRequestListApi(APIView):
    @extend_schema(summary="Requests for more you may see", responses={200: OpenApiTypes.OBJECT})
    def get(self, request):
        rows = more_requests_visible_to(request.user)
        status = request.query_params.get("status")
        if status:
            rows = rows.filter(status=status)
        return Response({"requests": [request_out(row, request.user) for row in rows[:500]]})

    @extend_schema(summary="Ask for more", request=MoreRequestIn, responses={201: OpenApiTypes.OBJECT})
    def post(self, request):
        data = _valid(MoreRequestIn, request.data)
        course = None
        if data.get("course"):
            course = Course.objects.filter(code__iexact=data["course"]).first()
            if course is None:
                raise InvalidInput(_("No course has this code."), fields={"course": _("No course has this code.")})
        row = more_request_create(
            user=request.user,
            kind=data["kind"],
            amount=data["amount"],
            until=data["until"],
            reason=data["reason"],
            course=course,
        )
        return Response(request_out(row, request.user), status=201)


class MoreRequestDecideApi(APIView):
    @extend_schema(summary="Approve or refuse a request", request=DecideIn, responses={200: OpenApiTypes.OBJECT})
    def post(self, request, request_id: int):
        if not more_requests_visible_to(request.user).filter(pk=request_id).exists():
            raise NotFound(_("No such request."))
        data = _valid(DecideIn, request.data)
        row = more_request_decide(
            by=request.user,
            request_id=request_id,
            decision=data["decision"],
            amount=data.get("amount"),
            until=data.get("until"),
            reason=data.get("reason", ""),
        )
        return Response(request_out(row, request.user))
