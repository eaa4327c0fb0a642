from csp.decorators import csp_update
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from jobs import urls as jobs_urls
from labs import api as labs_api
from labs import views as labs_views
from labs.budgets import urls as budgets_urls
from labs.coursework import urls as coursework_urls
from labs.maintenance import urls as maintenance_urls
from labs.notebooks import urls as notebooks_urls
from labs.reservations import urls as reservations_urls
from labs.telemetry import urls as telemetry_urls
from labs.usage import urls as usage_urls
from portal import ops
from portal.api import notify as notify_api
from portal.api import oversight as oversight_api
from portal.api import rosters as rosters_api
from portal.api import views as portal_api
from portal.api.errors import json_not_found
from portal.web import account, help_pages, kiosk, rosters, signin
from portal.web import views as web
from portal.web.console import urls as console_urls

# The API docs pages are drf-spectacular's, with Swagger UI and Redoc from our static files (drf-spectacular-sidecar),
# so they work without the internet; their pages carry a <style> block of their own. Swagger's start-up script is a
# file (the split view serves it at ?script), so scripts stay off inline there too.
_docs_csp = csp_update(
    {"style-src": ["'unsafe-inline'"], "img-src": ["data:"], "worker-src": ["blob:"]},
    REPORT_ONLY=settings.CSP_REPORT_ONLY,
)

api_v1 = [
    path("me/", portal_api.MeApi.as_view(), name="me"),
    path("me/notifications/", notify_api.NotificationsApi.as_view(), name="me-notifications"),
    path("me/notifications/test/", notify_api.NotificationsTestApi.as_view(), name="me-notifications-test"),
    path("token/", portal_api.TokenApi.as_view(), name="token"),
    path("nodes/", labs_api.NodeListApi.as_view(), name="nodes"),
    path("audit/", oversight_api.AuditApi.as_view(), name="audit"),
    path("requests/", oversight_api.MoreRequestListApi.as_view(), name="requests"),
    path("requests/<int:request_id>/decide/", oversight_api.MoreRequestDecideApi.as_view(), name="request-decide"),
    path("courses/<str:code>/roster/", rosters_api.RosterApi.as_view(), name="roster"),
    path("courses/<str:code>/roster/preview/", rosters_api.RosterPreviewApi.as_view(), name="roster-preview"),
    path("", include(reservations_urls.api_urlpatterns)),
    path("", include(telemetry_urls.api_urlpatterns)),
    path("", include(notebooks_urls.api_urlpatterns)),
    path("", include(jobs_urls.api_urlpatterns)),
    path("", include(budgets_urls.api_urlpatterns)),
    path("", include(maintenance_urls.api_urlpatterns)),
    path("", include(usage_urls.api_urlpatterns)),
    path("", include(coursework_urls.api_urlpatterns)),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", _docs_csp(SpectacularSwaggerSplitView.as_view(url_name="api:schema")), name="docs"),
    path("redoc/", _docs_csp(SpectacularRedocView.as_view(url_name="api:schema")), name="redoc"),
    # Unknown API paths answer in JSON even with DEBUG on.
    re_path(r"^.*$", json_not_found),
]

urlpatterns = [
    path("", web.dashboard, name="dashboard"),
    path("dashboard/live/", web.dashboard_live, name="dashboard-live"),
    # The pages' scripts' strings in the person's language (gettext() in static/js/, locale/*/djangojs.po).
    path("jsi18n/", JavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("login/", web.LoginView.as_view(), name="login"),
    path("login/oidc/", signin.OIDCStartView.as_view(), name="oidc_start"),
    path("login/oidc/callback/", signin.OIDCCallbackView.as_view(), name="oidc_callback"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/", account.account, name="account"),
    path("account/tokens/<int:token_id>/revoke/", account.token_revoke_view, name="account-token-revoke"),
    path("account/sign-out-everywhere/", account.sign_out_everywhere, name="account-sign-out-everywhere"),
    path("account/password/", web.PasswordChangeView.as_view(), name="password_change"),
    path("o/", include("portal.oauth.urls")),
    path("notices/<int:notice_id>/dismiss/", web.notice_dismiss_view, name="notice-dismiss"),
    path("help/", help_pages.help_page, name="help"),
    path("help/<str:role>/", help_pages.help_page, name="help-role"),
    path("kiosk/", kiosk.kiosk, name="kiosk"),
    path("kiosk/sign-out/", kiosk.kiosk_sign_out, name="kiosk-sign-out"),
    path("courses/<str:code>/roster/", rosters.roster_page, name="roster"),
    path("courses/<str:code>/roster/preview/", rosters.roster_preview, name="roster-preview"),
    path("courses/<str:code>/roster/import/", rosters.roster_import, name="roster-import"),
    path("courses/<str:code>/roster.csv", rosters.roster_csv, name="roster-csv"),
    path("courses/<str:code>/roster/<str:username>/invite/", rosters.roster_reinvite, name="roster-reinvite"),
    path("invite/<str:token>/", rosters.invitation_page, name="roster-invite"),
    path("invitations/<int:invitation_id>/", rosters.course_invitation, name="course-invitation"),
    path("lab/nodes/", labs_views.node_list, name="nodes"),
    path("lab/nodes/<str:name>/", labs_views.node_detail, name="node_detail"),
    path("", include(telemetry_urls.urlpatterns)),
    path("", include(reservations_urls.urlpatterns)),
    path("", include(jobs_urls.urlpatterns)),
    path("", include(notebooks_urls.urlpatterns)),
    path("", include(usage_urls.urlpatterns)),
    path("", include(coursework_urls.urlpatterns)),
    path("", include(console_urls.urlpatterns)),
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
