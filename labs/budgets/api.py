"""The budgets API: `GET /api/v1/budgets/` (whom selectors.budgets_visible_to allows), and for admins create, change,
delete. Thin: parse, call one selector or service, answer."""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.dates import LabDateField
from accounts.models import Course, User
from accounts.permissions import ADMINS_ONLY
from labs.budgets.selectors import BudgetUse, budget_for, budget_use, budgets_use, budgets_visible_to, thresholds_of
from labs.budgets.services import MANAGE, budget_create, budget_delete, budget_update
from labs.models.budgets import BudgetAction, BudgetPeriod


class AdminsWrite(permissions.BasePermission):
    """Everyone signed in reads (what they may see); only admins write: 403 before any budget is looked up."""

    message = ADMINS_ONLY.format(what=MANAGE)

    def has_permission(self, request, view) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in permissions.SAFE_METHODS or user.is_lab_admin


class BudgetIn(serializers.Serializer):
    name = serializers.CharField(max_length=120, required=False, allow_blank=True)
    course = serializers.CharField(max_length=32, required=False, allow_null=True, help_text="A course's code.")
    user = serializers.CharField(max_length=150, required=False, allow_null=True, help_text="A person's username.")
    period = serializers.ChoiceField(choices=BudgetPeriod.choices, required=False)
    starts_on = LabDateField(required=False, allow_null=True, help_text="Blank for a course's term: its first day.")
    ends_on = LabDateField(required=False, allow_null=True)
    gpu_hours = serializers.DecimalField(max_digits=9, decimal_places=1, help_text="GPU-hours per period.")
    price_per_gpu_hour = serializers.DecimalField(max_digits=12, decimal_places=4, required=False, allow_null=True)
    price_per_kwh = serializers.DecimalField(max_digits=10, decimal_places=4, required=False, allow_null=True)
    thresholds = serializers.CharField(max_length=40, required=False, allow_blank=True, help_text="e.g. 50,80,100")
    on_exceed = serializers.ChoiceField(choices=BudgetAction.choices, required=False)
    note = serializers.CharField(max_length=200, required=False, allow_blank=True)

    def validate_course(self, code):
        if not code:
            return None
        course = Course.objects.filter(code=code).first()
        if course is None:
            raise serializers.ValidationError(_("No course with code %(code)s.") % {"code": code[:32]})
        return course

    def validate_user(self, username):
        if not username:
            return None
        person = User.objects.named(username).first()  # whatever the case typed
        if person is None:
            raise serializers.ValidationError(_("No user %(name)s.") % {"name": username[:150]})
        return person


class BudgetPatchIn(BudgetIn):
    gpu_hours = serializers.DecimalField(max_digits=9, decimal_places=1, required=False)


class BudgetOut(serializers.Serializer):
    id = serializers.IntegerField(source="budget.pk")
    name = serializers.CharField(source="budget.name")
    course = serializers.CharField(source="budget.course.code", allow_null=True, default=None)
    user = serializers.CharField(source="budget.user.username", allow_null=True, default=None)
    period = serializers.ChoiceField(source="budget.period", choices=BudgetPeriod.choices)
    starts_on = serializers.DateField(source="budget.starts_on")
    ends_on = serializers.DateField(source="budget.ends_on", allow_null=True)
    gpu_hours = serializers.FloatField(source="budget.gpu_hours")
    price_per_gpu_hour = serializers.FloatField(source="budget.price_per_gpu_hour", allow_null=True)
    price_per_kwh = serializers.FloatField(source="budget.price_per_kwh", allow_null=True)
    currency = serializers.CharField()
    thresholds = serializers.SerializerMethodField(help_text="Alert percentages in force (the budget's or the lab's).")
    on_exceed = serializers.ChoiceField(source="budget.on_exceed", choices=BudgetAction.choices)
    note = serializers.CharField(source="budget.note")
    in_force = serializers.SerializerMethodField(help_text="Whether the budget counts now (its period has begun).")
    period_start = serializers.DateField(source="period.first_day", allow_null=True, default=None)
    period_end = serializers.DateField(source="period.last_day", allow_null=True, default=None)
    used_gpu_hours = serializers.FloatField()
    used_pct = serializers.FloatField(source="pct")
    exhausted = serializers.BooleanField()
    energy_kwh = serializers.FloatField(allow_null=True, help_text="With a kWh price: telemetry energy while held.")
    cost = serializers.FloatField(allow_null=True, help_text="GPU-hours and energy at the budget's prices.")

    def get_thresholds(self, use: BudgetUse) -> list[int]:
        return thresholds_of(use.budget)

    def get_in_force(self, use: BudgetUse) -> bool:
        return use.period is not None


class BudgetListApi(APIView):
    permission_classes = [AdminsWrite]

    @extend_schema(responses=BudgetOut(many=True), summary="Budgets I may see, with their use this period")
    def get(self, request):
        uses = budgets_use(budgets_visible_to(request.user), now=timezone.now())
        return Response(BudgetOut(uses, many=True).data)

    @extend_schema(request=BudgetIn, responses={201: BudgetOut}, summary="Set a budget for a course or a person")
    def post(self, request):
        data = BudgetIn(data=request.data)
        data.is_valid(raise_exception=True)
        budget = budget_create(by=request.user, **data.validated_data)
        return Response(BudgetOut(budget_use(budget)).data, status=status.HTTP_201_CREATED)


class BudgetDetailApi(APIView):
    permission_classes = [AdminsWrite]

    @extend_schema(responses=BudgetOut, summary="One budget and its use this period")
    def get(self, request, budget_id: int):
        return Response(BudgetOut(budget_use(budget_for(request.user, budget_id))).data)

    @extend_schema(request=BudgetPatchIn, responses=BudgetOut, summary="Change a budget (admins)")
    def patch(self, request, budget_id: int):
        budget = budget_for(request.user, budget_id)
        data = BudgetPatchIn(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        budget = budget_update(by=request.user, budget=budget, **data.validated_data)
        return Response(BudgetOut(budget_use(budget)).data)

    @extend_schema(responses={204: None}, summary="Delete a budget (admins)")
    def delete(self, request, budget_id: int):
        budget_delete(by=request.user, budget=budget_for(request.user, budget_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
