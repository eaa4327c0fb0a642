"""Notebook routes: the pages (`urlpatterns`) and the v1 API (`api_urlpatterns`), both included by portal/urls.py."""

from django.urls import path

from labs.notebooks import api, views

urlpatterns = [
    path("notebooks/", views.notebook_list, name="notebooks"),
    path("notebooks/<int:notebook_id>/stop/", views.notebook_stop_view, name="notebook-stop"),
    path("notebooks/<int:notebook_id>/extend/", views.notebook_extend_view, name="notebook-extend"),
    path("notebooks/course/", views.notebooks_course, name="notebooks-course"),
    path("notebooks/course/<str:code>/stop/", views.notebooks_course_stop, name="notebooks-course-stop"),
    path("notebooks/profiles/", views.notebook_profiles, name="notebook-profiles"),
    path("notebooks/profiles/new/", views.notebook_profile_new, name="notebook-profile-new"),
    path("notebooks/profiles/<slug:slug>/edit/", views.notebook_profile_edit, name="notebook-profile-edit"),
    path(
        "notebooks/profiles/<slug:slug>/deactivate/",
        views.notebook_profile_deactivate,
        name="notebook-profile-deactivate",
    ),
    path("notebooks/profiles/<slug:slug>/activate/", views.notebook_profile_activate, name="notebook-profile-activate"),
]

api_urlpatterns = [
    path("profiles/", api.ProfileListApi.as_view(), name="profiles"),
    path("notebooks/", api.NotebookListApi.as_view(), name="notebooks"),
    path("notebooks/<int:notebook_id>/", api.NotebookDetailApi.as_view(), name="notebook"),
    path("notebooks/<int:notebook_id>/extend/", api.NotebookExtendApi.as_view(), name="notebook-extend"),
]
