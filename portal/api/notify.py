"""GET|PUT /api/v1/me/notifications/ and POST /api/v1/me/notifications/test/: what a person is told, and how."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.notify.selectors import notify_overview
from accounts.notify.services import notify_test, preferences_set


class ChannelsOut(serializers.Serializer):
    portal = serializers.BooleanField()
    email = serializers.BooleanField()
    chat = serializers.BooleanField()


class EventOut(serializers.Serializer):
    event = serializers.CharField()
    label = serializers.CharField()
    channels = ChannelsOut()


class FailureOut(serializers.Serializer):
    event = serializers.CharField()
    channel = serializers.CharField()
    text = serializers.CharField()
    error = serializers.CharField()
    at = serializers.DateTimeField()


class NotificationsOut(serializers.Serializer):
    events = EventOut(many=True)
    channels = serializers.ListField(child=serializers.CharField())
    chat_url = serializers.CharField(allow_blank=True, help_text="Where chat messages go (an apprise URL).")
    failures = FailureOut(many=True, help_text="Messages that could not be delivered after every retry.")


class NotificationsIn(serializers.Serializer):
    events = serializers.DictField(
        child=serializers.DictField(child=serializers.BooleanField()),
        required=False,
        default=dict,
        help_text='Per event, per channel (portal, email, chat): on or off, e.g. {"job.failed": {"chat": true}}.',
    )
    chat_url = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        help_text='An apprise URL (json://host/path, slack://...); "" removes it.',
    )


class TestOut(serializers.Serializer):
    queued = serializers.ListField(child=serializers.CharField())


class NotificationsApi(APIView):
    @extend_schema(responses=NotificationsOut, summary="What I am told, and how")
    def get(self, request):
        return Response(NotificationsOut(notify_overview(request.user)).data)

    @extend_schema(request=NotificationsIn, responses=NotificationsOut, summary="Choose what I am told, and how")
    def put(self, request):
        data = NotificationsIn(data=request.data)
        data.is_valid(raise_exception=True)
        preferences_set(
            user=request.user, choices=data.validated_data["events"], chat_url=data.validated_data.get("chat_url")
        )
        return Response(NotificationsOut(notify_overview(request.user)).data)


class NotificationsTestApi(APIView):
    @extend_schema(request=None, responses={202: TestOut}, summary="Send me a test message on each of my channels")
    def post(self, request):
        return Response({"queued": notify_test(user=request.user)}, status=202)
