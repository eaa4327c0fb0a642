"""The reservation API: list, book, open, cancel, approve or reject; and availability. Thin."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from django.utils.text import format_lazy
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.dates import LabDateField, LabDateTimeField
from accounts.models import Course, User
from accounts.permissions import ADMINS_ONLY, RESERVATIONS_STAFF_ONLY, is_staff
from labs.models import NodeStatus
from labs.reservations.availability import free_nodes
from labs.reservations.selectors import reservation_for, reservations_listed
from labs.reservations.services import (
    SERIES_SCOPES,
    NodeRequest,
    reservation_cancel,
    reservation_create,
    reservation_decide,
    reservation_series_cancel,
)
from labs.selectors import nodes_visible_to


class IsTeacherOrAdmin(permissions.BasePermission):
    message = gettext_lazy(RESERVATIONS_STAFF_ONLY)  # in the asker's language

    def has_permission(self, request, view) -> bool:
        return bool(request.user and is_staff(request.user))


class IsLabAdmin(permissions.BasePermission):
    """On the reservation decision endpoint: the same sentence as the approvals page and the service."""

    message = format_lazy(gettext_lazy(ADMINS_ONLY), what=gettext_lazy("approve reservations"))

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_lab_admin)


class ReservationIn(serializers.Serializer):
    title = serializers.CharField(max_length=120)
    starts_at = LabDateTimeField(help_text="Without an offset, read in the lab's time zone.")
    ends_at = LabDateTimeField()
    nodes = serializers.ListField(
        child=serializers.CharField(max_length=63), required=False, allow_null=True, allow_empty=False, max_length=1000
    )
    node_count = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=10000)
    all_nodes = serializers.BooleanField(required=False, default=False)
    course = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=32)
    owner = serializers.CharField(required=False, max_length=150, help_text="Admins only: book for this teacher.")
    repeat_weekly_until = LabDateField(
        required=False, allow_null=True, help_text="Repeat at the same local time every week until this date."
    )

    def validate_course(self, code):
        if not code:
            return None
        course = Course.objects.filter(code=code).first()
        if course is None:
            raise serializers.ValidationError(_("No course with code %(code)s.") % {"code": code})
        return course

    def validate_owner(self, username):
        owner = User.objects.named(username).first()  # whatever the case typed
        if owner is None:
            raise serializers.ValidationError(_("No user %(name)s.") % {"name": username})
        return owner


class ReservationOut(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    nodes = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()
    status_reason = serializers.CharField()
    owner = serializers.CharField(source="owner.username")
    created_by = serializers.CharField(source="created_by.username")
    course = serializers.CharField(source="course.code", allow_null=True, default=None)
    requested = serializers.CharField(help_text="named, count or all")
    series = serializers.UUIDField(allow_null=True)

    def get_nodes(self, reservation) -> list[str]:
        listed = getattr(reservation, "node_names", None)  # the list's (reservations_listed)
        return listed if listed is not None else sorted(node.name for node in reservation.nodes.all())

    def get_status(self, reservation) -> str:
        return reservation.status_at(timezone.now())


class ReservationCreatedOut(ReservationOut):
    occurrences = serializers.SerializerMethodField(help_text="Ids of every week of a series (just this one else).")

    def get_occurrences(self, reservation) -> list[int]:
        return self.context.get("occurrences", [reservation.pk])


class ConflictOut(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    conflicts = serializers.ListField(child=serializers.DictField())
    earliest_fit = serializers.DictField(allow_null=True)


class WindowQuery(serializers.Serializer):
    def get_fields(self):
        # `from` is a Python keyword, so the fields are named here rather than as attributes.
        return {"from": LabDateTimeField(required=False), "to": LabDateTimeField(required=False)}

    def validate(self, data):
        # DRF reads a blank optional parameter as absent; `?to=` is more likely a script's mistake: say so.
        blank = {name: [_("Give an ISO time, or leave the parameter out.")] for name in ("from", "to")}
        blank = {name: why for name, why in blank.items() if self.initial_data.get(name) == ""}
        if blank:
            raise serializers.ValidationError(blank)
        return data


MAX_LIST_DAYS = 120


class ReservationListApi(APIView):
    permission_classes = [IsTeacherOrAdmin]

    @extend_schema(
        parameters=[
            OpenApiParameter("from", OpenApiTypes.DATETIME, description="ISO time; default now"),
            OpenApiParameter("to", OpenApiTypes.DATETIME, description="ISO time; default 14 days after from"),
        ],
        responses=ReservationOut(many=True),
        summary="Reservations overlapping a window",
    )
    def get(self, request):
        query = WindowQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        start = query.validated_data.get("from") or timezone.now()
        end = query.validated_data.get("to") or start + dt.timedelta(days=14)
        if end <= start:
            raise serializers.ValidationError({"to": [_("Must be after from.")]})
        if end - start > dt.timedelta(days=MAX_LIST_DAYS):
            raise serializers.ValidationError(
                {"to": [_("Ask for at most %(n)s days at a time.") % {"n": MAX_LIST_DAYS}]}
            )
        reservations = reservations_listed(request.user, start=start, end=end)
        return Response(ReservationOut(reservations, many=True).data)

    @extend_schema(
        request=ReservationIn,
        responses={201: ReservationCreatedOut, 409: ConflictOut},
        summary="Reserve whole nodes for a window (named, a count, or all)",
    )
    def post(self, request):
        data = ReservationIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        made = reservation_create(
            by=request.user,
            owner=values.get("owner"),
            title=values["title"],
            starts_at=values["starts_at"],
            ends_at=values["ends_at"],
            nodes=NodeRequest(
                names=tuple(values.get("nodes") or ()), count=values.get("node_count"), all_nodes=values["all_nodes"]
            ),
            course=values.get("course"),
            repeat_weekly_until=values.get("repeat_weekly_until"),
        )
        body = ReservationCreatedOut(made[0], context={"occurrences": [r.pk for r in made]}).data
        return Response(body, status=status.HTTP_201_CREATED)


class ReservationDetailApi(APIView):
    permission_classes = [IsTeacherOrAdmin]

    @extend_schema(responses=ReservationOut, summary="One reservation (its owner or an admin)")
    def get(self, request, reservation_id: int):
        return Response(ReservationOut(reservation_for(request.user, reservation_id)).data)

    @extend_schema(
        responses=ReservationOut,
        parameters=[
            OpenApiParameter(
                "series",
                str,
                enum=list(SERIES_SCOPES),
                description="A weekly series as a whole: all (every session not over yet) or from (this session and"
                " the later ones: the series shortened). The answer is then {series, cancelled: [reservations]}.",
            )
        ],
        summary="Cancel it (or end it now, if it has begun); with ?series=, its weekly series",
    )
    def delete(self, request, reservation_id: int):
        reservation = reservation_for(request.user, reservation_id)
        scope = request.query_params.get("series")
        if scope is not None:
            sessions = reservation_series_cancel(by=request.user, reservation=reservation, scope=scope)
            return Response({"series": str(reservation.series), "cancelled": ReservationOut(sessions, many=True).data})
        reservation = reservation_cancel(by=request.user, reservation=reservation)
        return Response(ReservationOut(reservation).data)


class DecisionIn(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=200, default="")


class ReservationDecisionApi(APIView):
    permission_classes = [IsLabAdmin]
    approve = True

    @extend_schema(request=DecisionIn, responses=ReservationOut, summary="Approve or reject a pending reservation")
    def post(self, request, reservation_id: int):
        data = DecisionIn(data=request.data)
        data.is_valid(raise_exception=True)
        reservation = reservation_decide(
            by=request.user,
            reservation=reservation_for(request.user, reservation_id),
            approve=self.approve,
            reason=data.validated_data["reason"],
        )
        return Response(ReservationOut(reservation).data)


class AvailabilityQuery(serializers.Serializer):
    starts_at = LabDateTimeField()
    ends_at = LabDateTimeField()

    def validate(self, data):
        if data["ends_at"] <= data["starts_at"]:
            raise serializers.ValidationError({"ends_at": [_("Must be after starts_at.")]})
        if data["ends_at"] - data["starts_at"] > dt.timedelta(days=31):
            raise serializers.ValidationError({"ends_at": [_("Ask about at most 31 days at a time.")]})
        return data


class AvailabilityOut(serializers.Serializer):
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    free_nodes = serializers.ListField(child=serializers.CharField(), help_text="Ready and unreserved throughout.")
    free_count = serializers.IntegerField()
    ready_count = serializers.IntegerField()


class AvailabilityApi(APIView):
    @extend_schema(parameters=[AvailabilityQuery], responses=AvailabilityOut, summary="Nodes free to reserve")
    def get(self, request):
        query = AvailabilityQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        start, end = query.validated_data["starts_at"], query.validated_data["ends_at"]
        names = [node.name for node in free_nodes(start, end)]
        body = {
            "starts_at": start,
            "ends_at": end,
            "free_nodes": names,
            "free_count": len(names),
            "ready_count": nodes_visible_to(request.user).filter(status=NodeStatus.READY).count(),
        }
        return Response(AvailabilityOut(body).data)
