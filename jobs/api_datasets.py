"""Datasets and course shares in the v1 API: what this person may mount, and defining one (teachers for their
courses, admins anywhere). Thin: the rules are jobs.datasets'."""

from __future__ import annotations

from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.errors import NotPermitted
from jobs.datasets import dataset_create, dataset_writable_by, datasets_usable_by, mount_path
from jobs.models import DatasetKind


class DatasetOut(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    kind = serializers.CharField(help_text="dataset (read-only) or share (a course share: its teachers write it).")
    course = serializers.CharField(source="course.code", allow_null=True, default=None, help_text="null: lab-wide.")
    writable = serializers.SerializerMethodField(help_text="Whether this person's notebooks may write it.")
    mount_path = serializers.SerializerMethodField(help_text="Where a notebook on the cluster finds it.")
    env = serializers.SerializerMethodField(help_text="The variable that gives its path in jobs and notebooks.")
    size_bytes = serializers.IntegerField(allow_null=True, help_text="When last measured; null if never.")

    def get_writable(self, dataset) -> bool:
        return dataset_writable_by(self.context["request"].user, dataset)

    def get_mount_path(self, dataset) -> str:
        return mount_path(dataset)

    def get_env(self, dataset) -> str:
        from jobs.backends.base import DatasetVolume

        return DatasetVolume(dataset.name).env_name


class _Text(serializers.CharField):
    """Text only: DRF's CharField would take 0 or true as "0" or "True"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class DatasetIn(serializers.Serializer):
    name = _Text(max_length=63)
    description = _Text(max_length=200, required=False, default="", allow_blank=True)
    course = _Text(max_length=32, required=False, allow_null=True, allow_blank=True, default=None)
    kind = serializers.ChoiceField(choices=DatasetKind.choices, required=False, default=DatasetKind.DATASET)
    claim = _Text(max_length=253, required=False, default="", allow_blank=True, help_text="Admins.")
    local_path = serializers.CharField(
        max_length=500, required=False, default="", allow_blank=True, help_text="Admins."
    )


class DatasetListApi(APIView):
    @extend_schema(responses=DatasetOut(many=True), summary="The datasets and course shares I may mount")
    def get(self, request):
        datasets = datasets_usable_by(request.user).order_by("name")
        return Response(DatasetOut(datasets, many=True, context={"request": request}).data)

    @extend_schema(request=DatasetIn, responses={201: DatasetOut}, summary="Define a dataset or course share")
    def post(self, request):
        if not (request.user.is_teacher or request.user.is_lab_admin):
            raise NotPermitted(_("Teachers define datasets for the courses they teach; lab-wide ones are for admins."))
        data = DatasetIn(data=request.data)
        data.is_valid(raise_exception=True)
        dataset = dataset_create(user=request.user, **data.validated_data)
        return Response(DatasetOut(dataset, context={"request": request}).data, status=status.HTTP_201_CREATED)
