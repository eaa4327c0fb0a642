"""A course's job templates (v1): its teachers and admins write them, the people enrolled in it read them. Thin."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.selectors import template_course_for
from jobs.services.templates import template_save


@extend_schema_field(
    {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Capital letters, digits and _: the job's variable."},
                "label": {"type": "string"},
                "type": {"type": "string", "enum": ["int", "float", "choice", "text"]},
                "min": {"type": "number"},
                "max": {"type": "number", "description": "For text: the longest value."},
                "choices": {"type": "array", "items": {"type": "string"}},
                "default": {},
            },
            "required": ["name", "type"],
        },
    }
)
class _Parameters(serializers.JSONField):
    """JSON read as it comes (the service names what is wrong); documented as the declarations it must be."""


@extend_schema_field({"type": "array", "items": {"type": "string"}})
class _Argv(serializers.JSONField):
    pass


class TemplateIn(serializers.Serializer):
    name = serializers.CharField(max_length=200, allow_blank=True)
    description = serializers.CharField(max_length=4000, allow_blank=True, required=False, default="")
    image = serializers.CharField(max_length=300, allow_blank=True)
    command = _Argv(required=False, default=None, help_text="argv; `{NAME}` in an argument is a parameter's value.")
    script = serializers.CharField(
        required=False,
        default=None,
        allow_null=True,
        allow_blank=True,
        trim_whitespace=False,
        help_text='Instead of command: run by the image\'s /bin/sh; a parameter is "$NAME".',
    )
    gpus = serializers.JSONField(required=False, default=1, help_text="GPUs per node.")
    nodes = serializers.JSONField(required=False, default=1)
    max_runtime_s = serializers.JSONField(required=False, default=3600)
    parameters = _Parameters(required=False, default=list)


class TemplateOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk")
    course = serializers.CharField(source="course.code")
    name = serializers.CharField()
    description = serializers.CharField()
    image = serializers.CharField()
    command = serializers.ListField(child=serializers.CharField())
    script = serializers.CharField()
    gpus = serializers.IntegerField(source="gpus_per_node")
    nodes = serializers.IntegerField()
    max_runtime_s = serializers.IntegerField()
    parameters = _Parameters(help_text="Each reaches the job as the environment variable of its name.")
    updated_at = serializers.DateTimeField()


class CourseJobTemplatesApi(APIView):
    @extend_schema(responses=TemplateOut(many=True), summary="A course's job templates (its teachers and students)")
    def get(self, request, code: str):
        course = template_course_for(request.user, code)
        return Response(TemplateOut(course.job_templates.select_related("course"), many=True).data)

    @extend_schema(request=TemplateIn, responses={201: TemplateOut}, summary="Add a job template to a course")
    def post(self, request, code: str):
        course = template_course_for(request.user, code, write=True)
        data = TemplateIn(data=request.data)
        data.is_valid(raise_exception=True)
        template = template_save(user=request.user, course=course, **data.validated_data)
        return Response(TemplateOut(template).data, status=status.HTTP_201_CREATED)


__all__ = ["CourseJobTemplatesApi"]
