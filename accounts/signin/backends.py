"""Local passwords, as LOCAL_LOGIN allows them: for everyone, for lab staff only (break-glass accounts), or nobody."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.backends import ModelBackend

from accounts.selectors import user_signed_in

logger = logging.getLogger("portal.signin")


def local_login_allows(user) -> bool:
    if settings.LOCAL_LOGIN == "all":
        return True
    if settings.LOCAL_LOGIN == "staff":
        return bool(user.is_lab_admin)
    return False


class LocalPasswordBackend(ModelBackend):
    """Django's password check, refusing (as a wrong password would) accounts LOCAL_LOGIN keeps off passwords."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None and not local_login_allows(user):
            logger.info("local password sign-in of %s refused: LOCAL_LOGIN=%s", user.username, settings.LOCAL_LOGIN)
            return None
        return user

    def get_user(self, user_id):
        return user_signed_in(user_id)  # the one lookup of a session's account, compiled once (accounts.selectors)
