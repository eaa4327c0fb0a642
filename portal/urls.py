from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from jobs import api as jobs_api
from jobs import views as jobs_views
from labs import api as labs_api
from labs import api_notebooks as labs_api_notebooks
from labs import views as labs_views
from labs import views_notebooks as labs_views_notebooks
from labs.reservations import urls as reservations_urls
from labs.telemetry import urls as telemetry_urls
from portal import ops
from portal.api import views as portal_api
from portal.api.errors import json_not_found
from portal.web import views as web

admin.site.site_header = "GPU Lab Portal — admin console"
admin.site.site_title = "GPU Lab admin"
admin.site.index_title = "Run the lab"

api_v1 = [
    path("me/", portal_api.MeApi.as_view(), name="me"),
    path("token/", portal_api.TokenApi.as_view(), name="token"),
    path("nodes/", labs_api.NodeListApi.as_view(), name="nodes"),
    path("", include(reservations_urls.api_urlpatterns)),
    path("", include(telemetry_urls.api_urlpatterns)),
    path("profiles/", labs_api_notebooks.ProfileListApi.as_view(), name="profiles"),
    path("notebooks/", labs_api_notebooks.NotebookListApi.as_view(), name="notebooks"),
    path("notebooks/<int:notebook_id>/", labs_api_notebooks.NotebookDetailApi.as_view(), name="notebook"),
    path("notebooks/<int:notebook_id>/extend/", labs_api_notebooks.NotebookExtendApi.as_view(), name="notebook-extend"),
    path("jobs/", jobs_api.JobListApi.as_view(), name="jobs"),
    path("jobs/preview/", jobs_api.JobPreviewApi.as_view(), name="job-preview"),
    path("jobs/<int:job_id>/", jobs_api.JobDetailApi.as_view(), name="job"),
    path("jobs/<int:job_id>/cancel/", jobs_api.JobCancelApi.as_view(), name="job-cancel"),
    path("jobs/<int:job_id>/logs/", jobs_api.JobLogsApi.as_view(), name="job-logs"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api:schema"), name="redoc"),
    # Unknown API paths answer in JSON even with DEBUG on.
    re_path(r"^.*$", json_not_found),
]

urlpatterns = [
    path("", web.dashboard, name="dashboard"),
    path("login/", web.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/", web.account, name="account"),
    path("account/password/", web.PasswordChangeView.as_view(), name="password_change"),
    path("o/", include("portal.oauth.urls")),
    path("notices/<int:notice_id>/dismiss/", web.notice_dismiss_view, name="notice-dismiss"),
    path("lab/nodes/", labs_views.node_list, name="nodes"),
    path("lab/nodes/<str:name>/", labs_views.node_detail, name="node_detail"),
    path("", include(telemetry_urls.urlpatterns)),
    path("", include(reservations_urls.urlpatterns)),
    path("jobs/", jobs_views.job_list, name="jobs"),
    path("jobs/new/", jobs_views.job_new, name="job-new"),
    path("jobs/<int:job_id>/", jobs_views.job_detail, name="job"),
    path("jobs/<int:job_id>/cancel/", jobs_views.job_cancel_view, name="job-cancel"),
    path("notebooks/", labs_views_notebooks.notebook_list, name="notebooks"),
    path("notebooks/<int:notebook_id>/stop/", labs_views_notebooks.notebook_stop_view, name="notebook-stop"),
    path("notebooks/<int:notebook_id>/extend/", labs_views_notebooks.notebook_extend_view, name="notebook-extend"),
    path("notebooks/course/", labs_views_notebooks.notebooks_course, name="notebooks-course"),
    path("notebooks/course/<str:code>/stop/", labs_views_notebooks.notebooks_course_stop, name="notebooks-course-stop"),
    path("notebooks/profiles/", labs_views_notebooks.notebook_profiles, name="notebook-profiles"),
    path("notebooks/profiles/new/", labs_views_notebooks.notebook_profile_new, name="notebook-profile-new"),
    path(
        "notebooks/profiles/<slug:slug>/edit/", labs_views_notebooks.notebook_profile_edit, name="notebook-profile-edit"
    ),
    path(
        "notebooks/profiles/<slug:slug>/deactivate/",
        labs_views_notebooks.notebook_profile_deactivate,
        name="notebook-profile-deactivate",
    ),
    path(
        "notebooks/profiles/<slug:slug>/activate/",
        labs_views_notebooks.notebook_profile_activate,
        name="notebook-profile-activate",
    ),
    path("admin/", admin.site.urls),
    path("api/v1/", include((api_v1, "api"))),
    path("healthz", ops.healthz, name="healthz"),
    path("readyz", ops.readyz, name="readyz"),
    path("metrics", ops.metrics, name="metrics"),
]

handler400 = "portal.web.errors.bad_request"
handler403 = "portal.web.errors.permission_denied"
handler404 = "portal.web.errors.not_found"
handler500 = "portal.web.errors.server_error"
