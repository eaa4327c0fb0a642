"""LDAP sign-in (django-auth-ldap) for departments without OpenID Connect, and the nightly sync of its groups.

People sign in with the password form; the directory checks the password, and their groups (looked up under
LDAP_GROUP_SEARCH_BASE) are mapped at every sign-in as an OIDC sign-in's are. Accounts are linked through
ExternalIdentity (the server's URI and the entry's DN, or LDAP_USER_ID_ATTR): a local account of the same user name
that is not linked is never taken over (an admin links it in the console).

Imported only when LDAP is configured (AUTHENTICATION_BACKENDS lists its backend only then; the sync asks
ldap_enabled() first): python-ldap and django-auth-ldap are the optional `ldap` extra."""

from __future__ import annotations

import logging

import ldap
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils.module_loading import import_string
from django_auth_ldap.backend import LDAPBackend, LDAPSettings
from django_auth_ldap.config import LDAPSearch

from accounts.models import ExternalIdentity, RoleSource, User
from accounts.selectors import user_signed_in
from accounts.signin import ldap_enabled
from accounts.signin.services import external_identity_sign_in, signin_groups_apply
from accounts.usernames import username_normalized

logger = logging.getLogger("portal.signin")

GROUP_TYPES = {
    "groupofnames": ("django_auth_ldap.config.GroupOfNamesType", "(objectClass=groupOfNames)"),
    "nestedgroupofnames": ("django_auth_ldap.config.NestedGroupOfNamesType", "(objectClass=groupOfNames)"),
    "groupofuniquenames": ("django_auth_ldap.config.GroupOfUniqueNamesType", "(objectClass=groupOfUniqueNames)"),
    "posixgroup": ("django_auth_ldap.config.PosixGroupType", "(objectClass=posixGroup)"),
    "activedirectory": ("django_auth_ldap.config.ActiveDirectoryGroupType", "(objectClass=group)"),
    "nestedactivedirectory": ("django_auth_ldap.config.NestedActiveDirectoryGroupType", "(objectClass=group)"),
}


def ldap_settings() -> LDAPSettings:
    """django-auth-ldap's settings, from the portal's LDAP_* ones (read at each use: tests and admins change them)."""
    group_type, group_filter = GROUP_TYPES[settings.LDAP_GROUP_TYPE]
    attrlist = ["*", settings.LDAP_USER_ID_ATTR] if settings.LDAP_USER_ID_ATTR else None
    return LDAPSettings(
        prefix="PORTAL_LDAP_UNUSED_",  # nothing is read from AUTH_LDAP_*: everything is given here
        defaults={
            "SERVER_URI": settings.LDAP_SERVER_URI,
            "BIND_DN": settings.LDAP_BIND_DN,
            "BIND_PASSWORD": settings.LDAP_BIND_PASSWORD,
            "START_TLS": settings.LDAP_START_TLS,
            "USER_SEARCH": LDAPSearch(
                settings.LDAP_USER_SEARCH_BASE, ldap.SCOPE_SUBTREE, settings.LDAP_USER_FILTER, attrlist
            ),
            "USER_ATTRLIST": attrlist,
            "USER_ATTR_MAP": {"first_name": "givenName", "last_name": "sn", "email": "mail"},
            "GROUP_SEARCH": LDAPSearch(
                settings.LDAP_GROUP_SEARCH_BASE, ldap.SCOPE_SUBTREE, settings.LDAP_GROUP_FILTER or group_filter
            ),
            "GROUP_TYPE": import_string(group_type)(),
            "ALWAYS_UPDATE_USER": True,
            "CACHE_TIMEOUT": 0,  # a group change applies at the next sign-in
            "CONNECTION_OPTIONS": {
                ldap.OPT_NETWORK_TIMEOUT: settings.LDAP_TIMEOUT_S,
                ldap.OPT_TIMEOUT: settings.LDAP_TIMEOUT_S,
                ldap.OPT_REFERRALS: 0,
            },
        },
    )


def _subject(ldap_user) -> str:
    if settings.LDAP_USER_ID_ATTR:
        values = ldap_user.attrs.get(settings.LDAP_USER_ID_ATTR.lower()) or ldap_user.attrs.get(
            settings.LDAP_USER_ID_ATTR
        )
        if values:
            return str(values[0])
    return ldap_user.dn.lower()


class PortalLDAPBackend(LDAPBackend):
    """The directory checks the password; the portal links the entry to an account and applies its groups."""

    @property
    def settings(self):
        return ldap_settings()

    @settings.setter
    def settings(self, value):  # django-auth-ldap's own setter; ours are always read fresh
        pass

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not ldap_enabled():
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id):
        return user_signed_in(user_id)

    def get_or_build_user(self, username, ldap_user):
        """The account linked to this entry; a new one (built, unsaved) when none is; never a local account by name."""
        identity = (
            ExternalIdentity.objects.select_related("user")
            .filter(issuer=settings.LDAP_SERVER_URI, subject=_subject(ldap_user))
            .first()
        )
        if identity is not None:
            return identity.user, False
        if User.objects.named(username).exists():  # whatever its case: "Student2" is student2's name
            logger.warning(
                "LDAP sign-in of %s refused: a local account has that name and is not linked to %s",
                username,
                ldap_user.dn,
            )
            raise ldap_user.AuthenticationFailed("a local account has this name")
        name = username_normalized(username).lower()
        return User(username=name, role=settings.SIGNIN_DEFAULT_ROLE, role_source=RoleSource.IDP), True

    def _link(self, user: User | None) -> User | None:
        if user is None or not hasattr(user, "ldap_user"):
            return user
        ldap_user = user.ldap_user
        return external_identity_sign_in(
            kind=ExternalIdentity.Kind.LDAP,
            issuer=settings.LDAP_SERVER_URI,
            subject=_subject(ldap_user),
            username=user.username,
            groups=sorted(ldap_user.group_names),
            user=user,
        )

    def authenticate_ldap_user(self, ldap_user, password):
        try:
            with transaction.atomic():  # a savepoint: the refusal below leaves the request's transaction usable
                user = self._link(super().authenticate_ldap_user(ldap_user, password))
        except IntegrityError:
            # An account of this name in another case was made between the check and the save (the database's
            # constraint refused the second): refused as a local account of that name is.
            logger.warning("LDAP sign-in of %s refused: an account of that name was made meanwhile", ldap_user.dn)
            return None
        return user if user is not None and user.is_active else None

    def populate_user(self, username):
        return self._link(super().populate_user(username))


def ldap_sync_all() -> dict[str, int]:
    """The nightly sync: everyone linked to this directory gets their groups applied again, without signing in.

    Someone no longer in the directory loses what the groups gave them (their account stays, for the ledger)."""
    counts = {"synced": 0, "gone": 0, "failed": 0}
    if not ldap_enabled():
        return counts
    backend = PortalLDAPBackend()
    identities = ExternalIdentity.objects.filter(kind=ExternalIdentity.Kind.LDAP, issuer=settings.LDAP_SERVER_URI)
    for identity in identities.select_related("user"):
        try:
            user = backend.populate_user(identity.user.username)
        except ldap.LDAPError as exc:
            logger.warning("LDAP sync of %s failed: %s", identity.user.username, exc)
            counts["failed"] += 1
            continue
        if user is None:
            logger.info("LDAP sync: %s is no longer in the directory; their courses from groups end", identity.user)
            signin_groups_apply(user=identity.user, groups=[])
            counts["gone"] += 1
        else:
            counts["synced"] += 1
    return counts
