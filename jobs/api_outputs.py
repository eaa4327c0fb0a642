"""A job's outputs and checkpoint (list, download) and "run again from this checkpoint", in the v1 API. Thin: who
may see what is jobs.selectors.job_for; what is read and how is jobs.outputs."""

from __future__ import annotations

import os

from django.http import FileResponse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.api import JobOut
from jobs.outputs import job_output_open, job_outputs, job_resume
from jobs.selectors import job_for


class OutputFileOut(serializers.Serializer):
    path = serializers.CharField(help_text="<section>/<path>: checkpoint/... or work/... (the current attempt's).")
    kind = serializers.CharField(help_text="file, dir, or other (a link or special file: listed, never served).")
    size = serializers.IntegerField(help_text="Bytes (files only).")
    modified_at = serializers.DateTimeField()


class OutputsOut(serializers.Serializer):
    files = OutputFileOut(many=True)
    total_bytes = serializers.IntegerField()
    truncated = serializers.BooleanField(help_text="More files than JOBS_OUTPUTS_LIST_MAX: the rest are not listed.")
    available = serializers.BooleanField(help_text="False where the files are out of the portal's reach (cluster).")
    kept_until = serializers.DateTimeField(allow_null=True, help_text="When they are removed; null while it runs.")


class JobOutputsApi(APIView):
    @extend_schema(
        operation_id="jobs_outputs_list",
        responses=OutputsOut,
        summary="A job's outputs and checkpoint: files, sizes, times",
    )
    def get(self, request, job_id: int):
        return Response(OutputsOut(job_outputs(job_for(request.user, job_id))).data)


class JobOutputFileApi(APIView):
    @extend_schema(
        operation_id="jobs_outputs_file",
        responses={(200, "application/octet-stream"): OpenApiResponse(description="The file's bytes.")},
        summary="Download one of a job's output or checkpoint files",
    )
    def get(self, request, job_id: int, path: str):
        fd, size, name = job_output_open(job_for(request.user, job_id), path)
        response = FileResponse(os.fdopen(fd, "rb"), as_attachment=True, filename=name)
        response["Content-Length"] = str(size)
        response["X-Content-Type-Options"] = "nosniff"
        return response


class JobResumeApi(APIView):
    @extend_schema(request=None, responses={201: JobOut}, summary="Run a finished job again from its checkpoint")
    def post(self, request, job_id: int):
        job = job_resume(user=request.user, job=job_for(request.user, job_id))
        return Response(JobOut(job).data, status=status.HTTP_201_CREATED)
