"""The Django admin, for the rare edits: the lab's objects first, the system's internals (sign-in lockouts, OAuth
clients and tokens, node agents' tokens, sign-in identities, Django's groups) apart at the end, under one heading.

Installed in place of django.contrib.admin (INSTALLED_APPS: LabAdminConfig), so `admin.site` is this site and every
`@admin.register` lands here as before. The admin's daily work is in the portal's operations console (/console/).
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig
from django.utils.translation import gettext_lazy as _

# Whole apps that are the system's, not the lab's; and single models of the lab's apps that are.
INTERNAL_APPS = frozenset(
    {"auth", "axes", "oauth2_provider", "authtoken", "django_celery_results", "django_celery_beat"}
)
INTERNAL_MODELS = frozenset(
    {
        ("accounts", "ExternalIdentity"),
        ("accounts", "TeachingSource"),
        ("accounts", "ApiToken"),
        ("labs", "NodeAgentToken"),
    }
)


def is_internal(app_label: str, object_name: str) -> bool:
    return app_label in INTERNAL_APPS or (app_label, object_name) in INTERNAL_MODELS


class LabAdminSite(admin.AdminSite):
    site_header = _("GPU Lab Portal — admin console")
    site_title = _("GPU Lab admin")
    index_title = _("Rare edits (daily work is in the operations console)")

    def get_app_list(self, request, app_label=None):
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps
        lab, internals = [], []
        for app in apps:
            mine = [m for m in app["models"] if not is_internal(app["app_label"], m["object_name"])]
            theirs = [m for m in app["models"] if is_internal(app["app_label"], m["object_name"])]
            for model in theirs:
                model["name"] = f"{model['name']} ({app['name']})"
            internals.extend(theirs)
            if mine:
                lab.append({**app, "models": mine})
        if internals:
            lab.append(
                {
                    "name": _("System internals"),
                    "app_label": "internals",
                    "app_url": "",
                    "has_module_perms": True,
                    "models": sorted(internals, key=lambda m: str(m["name"])),
                }
            )
        return lab


class LabAdminConfig(AdminConfig):
    default_site = "portal.web.admin_site.LabAdminSite"
