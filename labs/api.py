"""The lab's API: the node list. Thin: parse, call one selector, answer."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from labs.models import NodeStatus, ReservationStatus
from labs.reservations.selectors import node_reservations
from labs.selectors import nodes_visible_to


class NodeGpuOut(serializers.Serializer):
    index = serializers.IntegerField()
    uuid = serializers.CharField(allow_null=True)
    model = serializers.CharField()
    memory_mb = serializers.IntegerField()


class NodeReservationOut(serializers.Serializer):
    title = serializers.CharField(help_text="“Reserved” when the caller may not know more.")
    owner = serializers.CharField(allow_null=True)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=ReservationStatus.choices)


class NodeOut(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=NodeStatus.choices)
    status_reason = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField())
    gpus = NodeGpuOut(many=True, source="gpus.all")
    reservation = NodeReservationOut(allow_null=True, help_text="The reservation holding the node now.")
    next_reservation = NodeReservationOut(allow_null=True)


class NodeListApi(APIView):
    @extend_schema(responses=NodeOut(many=True), summary="Nodes of the lab, their GPUs and reservations")
    def get(self, request):
        nodes = list(nodes_visible_to(request.user))
        held = node_reservations(request.user, [node.pk for node in nodes])
        for node in nodes:
            node.reservation = held[node.pk]["current"]
            node.next_reservation = held[node.pk]["next"]
        return Response(NodeOut(nodes, many=True).data)
