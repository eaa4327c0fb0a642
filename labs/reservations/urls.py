"""Reservation routes: the pages (`urlpatterns`) and the v1 API (`api_urlpatterns`), both included by portal/urls.py."""

from django.urls import path

from labs.reservations import api, views

urlpatterns = [
    path("lab/reservations/", views.reservation_timeline, name="reservations"),
    path("lab/reservations/new/", views.reservation_new, name="reservation-new"),
    path("lab/reservations/approvals/", views.reservation_approvals, name="reservation-approvals"),
    path("lab/reservations/<int:reservation_id>/", views.reservation_detail, name="reservation"),
    path("lab/reservations/<int:reservation_id>/cancel/", views.reservation_cancel_view, name="reservation-cancel"),
    path("lab/reservations/<int:reservation_id>/decide/", views.reservation_decide_view, name="reservation-decide"),
]

api_urlpatterns = [
    path("reservations/", api.ReservationListApi.as_view(), name="reservations"),
    path("reservations/<int:reservation_id>/", api.ReservationDetailApi.as_view(), name="reservation"),
    path(
        "reservations/<int:reservation_id>/approve/",
        api.ReservationDecisionApi.as_view(approve=True),
        name="reservation-approve",
    ),
    path(
        "reservations/<int:reservation_id>/reject/",
        api.ReservationDecisionApi.as_view(approve=False),
        name="reservation-reject",
    ),
    path("availability/", api.AvailabilityApi.as_view(), name="availability"),
]
