"""`GET|POST /api/v1/maintenance/` (admins) and `GET /api/v1/announcements/` (everyone signed in). Thin."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.dates import LabDateTimeField
from accounts.permissions import ADMINS_ONLY
from labs.maintenance.selectors import announcements_active, maintenances_listed
from labs.maintenance.services import maintenance_create
from labs.models import Maintenance
from labs.models.nodes import node_name_validator


class AdminsOnly(permissions.BasePermission):
    message = ADMINS_ONLY.format(what="schedule maintenance")

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_lab_admin)


class MaintenanceIn(serializers.Serializer):
    nodes = serializers.ListField(
        child=serializers.CharField(max_length=63, validators=[node_name_validator]),
        required=False,
        max_length=500,
        help_text="The nodes' names; or all: true.",
    )
    all = serializers.BooleanField(required=False, default=False, help_text="Every node of the lab.")
    starts_at = LabDateTimeField()
    ends_at = LabDateTimeField()
    reason = serializers.CharField(max_length=300)


class MaintenanceOut(serializers.Serializer):
    id = serializers.IntegerField()
    nodes = serializers.SerializerMethodField()
    all = serializers.BooleanField(source="all_nodes")
    starts_at = LabDateTimeField()
    ends_at = LabDateTimeField()
    reason = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username")
    notified_at = LabDateTimeField(allow_null=True)
    started_at = LabDateTimeField(allow_null=True)
    ended_at = LabDateTimeField(allow_null=True)

    def get_nodes(self, maintenance: Maintenance) -> list[str]:
        return sorted(node.name for node in maintenance.nodes.all())


class MaintenanceApi(APIView):
    permission_classes = [AdminsOnly]

    @extend_schema(responses=MaintenanceOut(many=True), summary="Maintenance windows (current, coming, last 30 days)")
    def get(self, request):
        return Response(MaintenanceOut(maintenances_listed(), many=True).data)

    @extend_schema(request=MaintenanceIn, responses={201: MaintenanceOut}, summary="Schedule maintenance")
    def post(self, request):
        data = MaintenanceIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        made = maintenance_create(
            by=request.user,
            starts_at=values["starts_at"],
            ends_at=values["ends_at"],
            reason=values["reason"],
            nodes=values.get("nodes") or [],
            all_nodes=values["all"],
        )
        return Response(MaintenanceOut(made).data, status=status.HTTP_201_CREATED)


class AnnouncementOut(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    severity = serializers.CharField()
    starts_at = LabDateTimeField()
    ends_at = LabDateTimeField()


class AnnouncementsApi(APIView):
    @extend_schema(responses=AnnouncementOut(many=True), summary="The announcements shown now")
    def get(self, request):
        return Response(AnnouncementOut(announcements_active(), many=True).data)
