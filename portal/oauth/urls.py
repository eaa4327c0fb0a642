"""Only what the hub's login needs; none of django-oauth-toolkit's application-management pages.

The namespace stays "oauth2_provider": the toolkit's views find each other by these names.
"""

from django.urls import path, re_path
from oauth2_provider import views

from portal.oauth import views as portal_views

app_name = "oauth2_provider"

urlpatterns = [
    path("authorize/", views.AuthorizationView.as_view(), name="authorize"),
    path("token/", portal_views.TokenView.as_view(), name="token"),
    path("revoke_token/", views.RevokeTokenView.as_view(), name="revoke-token"),
    path("userinfo/", portal_views.UserInfoView.as_view(), name="user-info"),
    # The discovery document is named without a trailing slash; the toolkit still accepts one.
    re_path(
        r"^\.well-known/openid-configuration/?$",
        portal_views.ConnectDiscoveryInfoView.as_view(),
        name="oidc-connect-discovery-info",
    ),
    path(".well-known/jwks.json", views.JwksInfoView.as_view(), name="jwks-info"),
    # RFC 8414 metadata: with it mounted, the `iss` the authorization response carries is this issuer ({portal}/o).
    path(
        ".well-known/oauth-authorization-server",
        views.OAuthServerMetadataView.as_view(),
        name="oauth-server-metadata",
    ),
]
