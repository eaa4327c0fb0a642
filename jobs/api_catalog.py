"""What a person may choose from when submitting a job (v1): the images of the allow-list. Thin."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from labs.images import images_offered


class ImageOut(serializers.Serializer):
    name = serializers.CharField(help_text="The image reference to give as a job's `image` (a pattern: see below).")
    description = serializers.CharField(help_text="What is in it, as the lab's admins describe it (may be empty).")
    gpu = serializers.BooleanField(help_text="The admins say it brings CUDA; false where nobody said.")
    pattern = serializers.BooleanField(
        help_text="A family of images (with *, e.g. pytorch/pytorch:*): any reference that matches may be given."
    )


class ImageListApi(APIView):
    @extend_schema(responses=ImageOut(many=True), summary="The images I may run jobs in (the lab's allow-list)")
    def get(self, request):
        return Response(ImageOut(images_offered(), many=True).data)


__all__ = ["ImageListApi"]
