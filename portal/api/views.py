from django.conf import settings
from django.contrib.auth import authenticate
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.locale import language_of
from accounts.models import TokenSource
from accounts.quotas import effective_quota
from accounts.selectors import courses_of, role_of
from accounts.services import TOKEN_LIFETIME_MAX_DAYS, token_create
from jobs.selectors import jobs_queued_count
from labs.selectors import usage_of
from portal.api.throttles import ClientIpThrottle
from portal.web.lockout import locked_error


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
    lab_time_zone = serializers.CharField(help_text="The lab's time zone (IANA): times are shown and entered in it.")
    language = serializers.CharField(help_text="The language the portal writes to this person in (pt-br, en).")


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
            "lab_time_zone": settings.TIME_ZONE,
            "language": language_of(user),
        }
        return Response(MeOut(body).data)


class TokenIn(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=256, trim_whitespace=False)
    name = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default="", help_text="What the token is for (any text)."
    )
    expires_in_days = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=1,
        max_value=TOKEN_LIFETIME_MAX_DAYS,
        help_text="Days until it stops working; at most, and by default, the lab's API_TOKEN_TTL_DAYS.",
    )


class TokenOut(serializers.Serializer):
    token = serializers.CharField(help_text="The key: shown only now, stored only hashed.")
    id = serializers.IntegerField()
    name = serializers.CharField()
    expires_at = serializers.DateTimeField(
        allow_null=True, help_text="When the token stops working (null: when revoked); then ask again."
    )


class TokenApi(APIView):
    """Trade a username and password for a new API token (for scripts).

    Each call makes a new token (the key is shown once; only its hash is kept), so keep it rather than asking for
    one on every run. Tokens are listed and revoked on the account page; a new password revokes them all.
    """

    authentication_classes: list = []
    permission_classes: list = []
    # Keyed on the client's address as FORWARDED_ALLOW_IPS says (accounts.addresses): a made-up X-Forwarded-For
    # does not get a fresh budget.
    throttle_classes = [ClientIpThrottle]
    throttle_scope = "token"

    def get_authenticate_header(self, request) -> str:
        return "Token"  # so a failed sign-in is a 401, as for every other credential

    @extend_schema(request=TokenIn, responses=TokenOut, summary="Get a new API token with your password")
    def post(self, request):
        data = TokenIn(data=request.data)
        data.is_valid(raise_exception=True)
        credentials = {"username": data.validated_data["username"], "password": data.validated_data["password"]}
        # Django's request, so that django-axes marks a locked (username, address) pair where its middleware looks.
        user = authenticate(request._request, **credentials)
        if user is None and getattr(request._request, "axes_locked_out", False):
            raise locked_error(request._request, credentials)
        if user is None:
            # One answer for unknown users and wrong passwords: never reveal which accounts exist.
            raise exceptions.AuthenticationFailed(_("Wrong username or password."))
        token, key = token_create(
            user=user,
            name=data.validated_data["name"],
            expires_in_days=data.validated_data["expires_in_days"],
            source=TokenSource.PASSWORD,  # outlives a sign-out everywhere; a new password ends it
        )
        body = {"token": key, "id": token.pk, "name": token.name, "expires_at": token.expires_at}
        return Response(TokenOut(body).data)  # 200, as before tokens were many
