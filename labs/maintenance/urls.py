"""Maintenance and announcement routes of the v1 API, included by portal/urls.py (admins post announcements in the
console)."""

from django.urls import path

from labs.maintenance import api

api_urlpatterns = [
    path("maintenance/", api.MaintenanceApi.as_view(), name="maintenance"),
    path("announcements/", api.AnnouncementsApi.as_view(), name="announcements"),
]
