"""The university's sign-in: OpenID Connect and LDAP, and what their groups give people (roles, courses).

LDAP is optional: python-ldap and django-auth-ldap come with the `ldap` extra (pip install '.[ldap]'), and without
LDAP_SERVER_URI nothing imports them. Code that may run without LDAP asks ldap_enabled() before it imports
accounts.signin.ldap (the nightly sync: accounts/tasks.py)."""

from __future__ import annotations

from django.conf import settings


def ldap_enabled() -> bool:
    return bool(settings.LDAP_SERVER_URI)
