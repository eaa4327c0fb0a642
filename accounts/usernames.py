"""One person, one name: user names are the same whatever their case.

The database holds the rule (the unique constraint on Lower(username), migration 0008); every path that finds a
person by the name someone typed or listed (password sign-in, rosters, `portal_user`, the API's `user`/`owner`
fields, the university's sign-in proposing a name) asks `User.objects.named(...)`, which compares the way the
constraint does: the database's lower() of both sides, after the NFKC normalisation Django's forms apply. A name
keeps the case it was created with, for display.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from django.contrib.auth.models import UserManager
from django.db import models
from django.db.models import Value
from django.db.models.functions import Lower
from django.utils.translation import gettext as _


def username_normalized(name: str) -> str:
    """The name as Django's forms store it (NFKC: a full-width or compatibility letter becomes the plain one)."""
    return unicodedata.normalize("NFKC", str(name))


def username_key(name: str) -> str:
    """A name's comparison key in Python (lockout keys, duplicates inside one file): NFKC, then lower case."""
    return username_normalized(name).lower()


def username_taken_sentence(existing: str) -> str:
    return _(
        "The account “%(existing)s” already has this name: user names that differ only in case are the same name."
        " Choose another name, or use that account."
    ) % {"existing": existing}


class UserQuerySet(models.QuerySet):
    def named(self, name: str) -> UserQuerySet:
        """The account called `name` whatever its case (at most one, by the constraint)."""
        return self.alias(username_lower=Lower("username")).filter(
            username_lower=Lower(Value(username_normalized(name)))
        )

    def named_any(self, names: Iterable[str]) -> UserQuerySet:
        """The accounts called any of `names`, whatever their case."""
        keys = [Lower(Value(name)) for name in sorted({username_normalized(name) for name in names})]
        if not keys:
            return self.none()
        return self.alias(username_lower=Lower("username")).filter(username_lower__in=keys)


class NamedUserManager(UserManager.from_queryset(UserQuerySet)):
    def get_by_natural_key(self, username):
        """Password sign-in (Django's ModelBackend: the login page, the admin console, POST /api/v1/token/) and
        `createsuperuser`'s check find the account whatever the case typed."""
        found = list(self.named(username)[:2])
        if len(found) == 1:
            return found[0]
        if not found:
            raise self.model.DoesNotExist
        # Two accounts differing only in case exist only before migration 0008 could apply (it refuses until an
        # admin renames one): then only the exact name signs in, as before.
        return self.get(username=username)
