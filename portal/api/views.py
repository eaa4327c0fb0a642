from django.contrib.auth import authenticate
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from jobs.selectors import jobs_queued_count
from labs.selectors import usage_of
from portal.accounts.selectors import courses_of, effective_quota, role_of, token_expires_at
from portal.accounts.services import token_obtain
from portal.api.throttles import ClientIpThrottle


class CourseOut(serializers.Serializer):
    code = serializers.CharField()
    name = serializers.CharField()
    role = serializers.ChoiceField(choices=["student", "assistant", "teacher"], help_text="Your part in the course.")
    term_start = serializers.DateField()
    term_end = serializers.DateField()
    active = serializers.BooleanField(help_text="False once the term is over.")


class QuotaOut(serializers.Serializer):
    max_notebooks = serializers.IntegerField()
    notebook_gpu_share = serializers.FloatField()
    gpu_hours_week = serializers.FloatField()
    max_jobs = serializers.IntegerField()
    max_gpus_per_job = serializers.IntegerField()
    reservation_max_nodes = serializers.IntegerField()
    reservation_max_hours = serializers.FloatField()
    reservation_node_hours_week = serializers.FloatField()
    reservation_horizon_days = serializers.IntegerField()
    reservation_notice_min = serializers.IntegerField()
    reservation_approval_nodes = serializers.IntegerField()


class UsageOut(serializers.Serializer):
    gpu_hours_week = serializers.FloatField()
    notebooks_running = serializers.IntegerField()
    jobs_running = serializers.IntegerField()
    jobs_queued = serializers.IntegerField()
    week_started_at = serializers.DateTimeField()


class MeOut(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()
    email = serializers.EmailField(allow_blank=True)
    courses = CourseOut(many=True)
    quota = QuotaOut()
    usage = UsageOut()


class MeApi(APIView):
    @extend_schema(responses=MeOut, summary="Who I am, my courses, my limits and my usage")
    def get(self, request):
        user = request.user
        usage = {**usage_of(user), "jobs_queued": jobs_queued_count(user)}
        body = {
            "username": user.username,
            "role": role_of(user),
            "email": user.email,
            "courses": courses_of(user),
            "quota": effective_quota(user).as_dict(),
            "usage": usage,
        }
        return Response(MeOut(body).data)


class TokenIn(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=256, trim_whitespace=False)


class TokenOut(serializers.Serializer):
    token = serializers.CharField()
    expires_at = serializers.DateTimeField(
        allow_null=True, help_text="When the token stops working (null: when revoked); then ask again."
    )


class TokenApi(APIView):
    """Trade a username and password for the user's API token (for scripts).

    The same token comes back until it expires or is revoked (account page, a new password); then a new one.
    """

    authentication_classes: list = []
    permission_classes: list = []
    # Keyed on the client's address as NUM_PROXIES says: a made-up X-Forwarded-For does not get a fresh budget.
    throttle_classes = [ClientIpThrottle]
    throttle_scope = "token"

    def get_authenticate_header(self, request) -> str:
        return "Token"  # so a failed sign-in is a 401, as for every other credential

    @extend_schema(request=TokenIn, responses=TokenOut, summary="Get your API token with your password")
    def post(self, request):
        data = TokenIn(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(request, **data.validated_data)
        if user is None:
            # One answer for unknown users and wrong passwords: never reveal which accounts exist.
            raise exceptions.AuthenticationFailed("Wrong username or password.")
        token = token_obtain(user=user)
        return Response(TokenOut({"token": token.key, "expires_at": token_expires_at(token)}).data)
