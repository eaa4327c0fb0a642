from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from jobs import urls as jobs_urls
from labs import api as labs_api
from labs import views as labs_views
from labs.notebooks import urls as notebooks_urls
from labs.reservations import urls as reservations_urls
from labs.telemetry import urls as telemetry_urls
from labs.usage import urls as usage_urls
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
    path("", include(notebooks_urls.api_urlpatterns)),
    path("", include(jobs_urls.api_urlpatterns)),
    path("", include(usage_urls.api_urlpatterns)),
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
    path("", include(jobs_urls.urlpatterns)),
    path("", include(notebooks_urls.urlpatterns)),
    path("", include(usage_urls.urlpatterns)),
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
