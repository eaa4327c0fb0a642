"""Course-work routes: the pages (`urlpatterns`) and the v1 API (`api_urlpatterns`), both included by portal/urls.py."""

from django.urls import path

from labs.coursework import api, views

urlpatterns = [
    path("courses/<str:code>/coursework/", views.coursework_page, name="coursework"),
    path("assignments/<int:assignment_id>/submissions/", views.submissions_page, name="submissions"),
    path("assignments/<int:assignment_id>/submissions.csv", views.submissions_csv, name="submissions-csv"),
    path("assignments/<int:assignment_id>/submissions.zip", views.submissions_zip, name="submissions-zip"),
    path(
        "assignments/<int:assignment_id>/submissions/<str:username>/",
        views.submission_view,
        name="submission",
    ),
    path("assignments/<int:assignment_id>/hand-in/", views.hand_in_view, name="hand-in"),
    path("assignments/<int:assignment_id>/extensions/", views.extension_view, name="extension"),
]

api_urlpatterns = [
    path("courses/<str:code>/materials/", api.MaterialListApi.as_view(), name="course-materials"),
    path("courses/<str:code>/assignments/", api.AssignmentListApi.as_view(), name="course-assignments"),
    path(
        "assignments/<int:assignment_id>/submissions/", api.SubmissionListApi.as_view(), name="assignment-submissions"
    ),
    path(
        "assignments/<int:assignment_id>/submissions/<str:username>/archive",
        api.SubmissionArchiveApi.as_view(),
        name="assignment-archive",
    ),
]
