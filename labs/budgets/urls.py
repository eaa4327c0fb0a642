"""Budget routes: the v1 API (`api_urlpatterns`), included by portal/urls.py. Admins manage budgets in the console."""

from django.urls import path

from labs.budgets import api

api_urlpatterns = [
    path("budgets/", api.BudgetListApi.as_view(), name="budgets"),
    path("budgets/<int:budget_id>/", api.BudgetDetailApi.as_view(), name="budget"),
]
