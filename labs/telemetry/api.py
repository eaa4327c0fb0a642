"""Live GPU status over the API: GET /api/v1/gpus/ for people, POST /api/v1/agent/samples/ for node agents."""

from __future__ import annotations

import datetime as dt
import logging
import math

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, inline_serializer
from rest_framework import exceptions, serializers, status
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.addresses import client_ip
from labs.models import NodeAgentToken
from labs.telemetry.agents import agent_token_check
from labs.telemetry.samples import LIMITS
from labs.telemetry.selectors import gpus_visible_to
from labs.telemetry.services import agent_push

log = logging.getLogger("labs.telemetry")


# --- GET /api/v1/gpus/ -------------------------------------------------------------------


class HolderEntryOut(serializers.Serializer):
    user = serializers.CharField()
    kind = serializers.ChoiceField(choices=["notebook", "job", "reservation"])
    ref = serializers.CharField()
    course = serializers.CharField(allow_null=True)
    share = serializers.FloatField()
    since = serializers.DateTimeField()
    mine = serializers.BooleanField()


class HolderOut(serializers.Serializer):
    busy = serializers.BooleanField()
    share = serializers.FloatField(help_text="How much of the GPU is held, all holders together (1 = all of it).")
    holders = HolderEntryOut(many=True, help_text="The holders this caller may know of.")
    others = serializers.IntegerField(help_text="Holders this caller may not know of.")


class AlertOut(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["temperature", "xid"])
    message = serializers.CharField()


class GpuOut(serializers.Serializer):
    node = serializers.CharField()
    index = serializers.IntegerField()
    uuid = serializers.CharField(allow_null=True)
    model = serializers.CharField()
    util_pct = serializers.IntegerField(allow_null=True)
    mem_used_mb = serializers.IntegerField(allow_null=True)
    mem_total_mb = serializers.IntegerField(allow_null=True)
    temp_c = serializers.IntegerField(allow_null=True)
    power_w = serializers.FloatField(allow_null=True)
    holder = HolderOut(allow_null=True, help_text="Null when nobody holds the GPU.")
    sampled_at = serializers.DateTimeField(allow_null=True)
    stale = serializers.BooleanField(help_text="No sample for TELEMETRY_STALE_AFTER_S (30 s).")
    node_status = serializers.ChoiceField(choices=["ready", "cordoned", "down"])
    node_reason = serializers.CharField(help_text="Why the node is cordoned or down; empty when it is ready.")
    available = serializers.BooleanField(help_text="The caller could start something on it now.")
    alerts = AlertOut(many=True, required=False, help_text="Open health alerts (admins only).")


class GpuListApi(APIView):
    @extend_schema(responses=GpuOut(many=True), summary="The latest sample of every GPU you may see")
    def get(self, request):
        # The records are built as plain dicts already shaped as GpuOut; no serializer pass needed.
        return Response(gpus_visible_to(request.user))


# --- POST /api/v1/agent/samples/ -----------------------------------------------------------


class NodeTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer gna_...`: a node agent's key (see labs.telemetry.agents)."""

    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Send the node key as 'Authorization: Bearer <key>'.")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("The node key is not valid.") from None
        token = agent_token_check(key)
        if token is None:
            log.warning("telemetry: refused an agent push with an unknown or revoked key from %s", _client(request))
            raise exceptions.AuthenticationFailed("The node key is not valid (unknown or revoked).")
        return (_AgentUser(token), token)

    def authenticate_header(self, request):
        return "Bearer"


class NodeTokenScheme(OpenApiAuthenticationExtension):
    target_class = "labs.telemetry.api.NodeTokenAuthentication"
    name = "nodeAgentKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A node agent's key (gpu_agent_token)."}


class _AgentUser:
    """The principal of an agent request: a node, not a person."""

    is_authenticated = True
    is_active = True
    is_anonymous = False
    pk = None

    def __init__(self, token: NodeAgentToken) -> None:
        self.node = token.node
        self.username = f"agent:{token.node.name}"

    def __str__(self) -> str:
        return self.username


class IsNodeAgent(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, NodeAgentToken)


def _client(request) -> str:
    return client_ip(request)


@extend_schema_field({"oneOf": [{"type": "number"}, {"type": "string", "format": "date-time"}]})
class TimestampField(serializers.Field):
    """Seconds since the epoch (what the agent sends) or an ISO 8601 time with an offset."""

    default_error_messages = {"invalid": "Give seconds since the epoch or an ISO 8601 time with a UTC offset."}

    def to_internal_value(self, data) -> float:
        if isinstance(data, bool):
            self.fail("invalid")
        # Any real moment passes here, however far off: the sample's own check says "in the future" or "more than
        # 5 minutes ago", which tells the node's admin what to fix. Only what is no time at all is refused here.
        if isinstance(data, (int, float)):
            try:
                seconds = float(data)  # a 400-digit int overflows
            except OverflowError:
                self.fail("invalid")
            if not math.isfinite(seconds):
                self.fail("invalid")
            return seconds
        if isinstance(data, str):
            try:
                parsed = dt.datetime.fromisoformat(data)
            except ValueError:
                self.fail("invalid")
            if parsed.tzinfo is None:
                self.fail("invalid")
            try:
                return parsed.timestamp()
            except (OverflowError, ValueError):
                self.fail("invalid")
        self.fail("invalid")

    def to_representation(self, value):
        return value


def _bounded(field: str, **kwargs) -> serializers.FloatField:
    low, high = LIMITS[field]
    return serializers.FloatField(min_value=low, max_value=high, required=False, allow_null=True, **kwargs)


class SampleIn(serializers.Serializer):
    index = serializers.IntegerField(min_value=0, max_value=1023)
    uuid = serializers.CharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    model = serializers.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    util_pct = _bounded("util_pct")
    mem_used_mb = _bounded("mem_used_mb")
    mem_total_mb = _bounded("mem_total_mb")
    temp_c = _bounded("temp_c")
    power_w = _bounded("power_w")
    energy_j = _bounded("energy_j")
    xid = serializers.IntegerField(min_value=0, max_value=int(LIMITS["xid"][1]), required=False, allow_null=True)
    sampled_at = TimestampField(required=False)


class PushIn(serializers.Serializer):
    node = serializers.CharField(max_length=63)
    samples = SampleIn(many=True, allow_empty=False, max_length=64)

    def validate_samples(self, samples):
        indexes = [sample["index"] for sample in samples]
        if len(indexes) != len(set(indexes)):
            raise serializers.ValidationError("Each GPU index may appear once per push.")
        return samples


class AgentSamplesApi(APIView):
    authentication_classes = [NodeTokenAuthentication]
    permission_classes = [IsNodeAgent]
    throttle_classes: list = []

    @extend_schema(
        request=PushIn,
        responses={
            202: inline_serializer(
                "PushAccepted", {"node": serializers.CharField(), "accepted": serializers.IntegerField()}
            ),
            400: OpenApiResponse(description="Malformed push or impossible values; nothing is kept."),
            401: OpenApiResponse(description="No or an unknown node key."),
            403: OpenApiResponse(description="The key belongs to another node."),
        },
        summary="A node agent pushes its GPUs' NVML samples (Authorization: Bearer <node key>)",
    )
    def post(self, request):
        token: NodeAgentToken = request.auth
        body = PushIn(data=request.data)
        if not body.is_valid():
            log.warning("telemetry: refused a malformed push for %s: %s", token.node.name, dict(body.errors))
            raise exceptions.ValidationError(body.errors)
        data = body.validated_data
        accepted = agent_push(token=token, node=data["node"], samples=data["samples"], client=_client(request))
        return Response({"node": token.node.name, "accepted": accepted}, status=status.HTTP_202_ACCEPTED)
