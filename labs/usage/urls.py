"""Usage routes: the pages (`urlpatterns`) and the v1 API (`api_urlpatterns`), included by portal/urls.py."""

from django.urls import path

from labs.usage import api, views

urlpatterns = [
    path("usage/", views.my_usage, name="usage-mine"),
    path("usage/courses/", views.course_usage, name="usage-courses"),
    path("usage/lab/", views.lab_usage, name="usage-lab"),
    path("usage/csv/<slug:table>/", views.table_csv, name="usage-csv"),
]

api_urlpatterns = [
    path("usage/", api.UsageApi.as_view(), name="usage"),
    path("usage/efficiency/", api.EfficiencyApi.as_view(), name="usage-efficiency"),
]
