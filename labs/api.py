from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from labs.models import NodeStatus
from labs.selectors import nodes_visible_to


class GpuOut(serializers.Serializer):
    index = serializers.IntegerField()
    uuid = serializers.CharField(allow_null=True)
    model = serializers.CharField()
    memory_mb = serializers.IntegerField()


class NodeOut(serializers.Serializer):
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=NodeStatus.values)
    status_reason = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField())
    gpus = GpuOut(many=True, source="gpus.all")


class NodeListApi(APIView):
    @extend_schema(responses=NodeOut(many=True), summary="Nodes of the lab and their GPUs")
    def get(self, request):
        return Response(NodeOut(nodes_visible_to(request.user), many=True).data)
