"""The kiosk page a lab machine's browser opens at power-on: sign in, get a desktop, sign out for the next person.

The desktop is a notebook of the profile KIOSK_PROFILE ("Desktop": deploy/desktop's image, XFCE over noVNC at
<server>/desktop/), started through the same queue, quotas and ledger as any notebook; the page follows it (a meta
refresh, no script) until it is ready, then links to the desktop. "Sign out" stops that desktop and ends the
person's portal session, so the seat is ready for the next one. Thin: notebook services do the work.
"""

from __future__ import annotations

import contextlib

from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts.errors import PortalError
from labs.models import NOTEBOOK_LIVE, NotebookSession, NotebookStatus
from labs.notebooks.selectors import notebooks_visible_to
from labs.notebooks.services import notebook_request, notebook_stop

# Seconds between looks while the desktop is queued or starting.
REFRESH_S = 3


def _desktops(request: HttpRequest) -> list[NotebookSession]:
    mine = notebooks_visible_to(request.user).filter(user=request.user, profile__slug=settings.KIOSK_PROFILE)
    return list(mine.filter(status__in=NOTEBOOK_LIVE).order_by("-requested_at"))


def _page(request: HttpRequest, *, error: str = "", status: int = 200) -> HttpResponse:
    live = _desktops(request)
    session = live[0] if live else None
    ready = session is not None and session.status == NotebookStatus.READY and bool(session.url)
    context = {
        "session": session,
        "desktop_url": f"{session.url.rstrip('/')}/desktop/" if ready else "",
        "refresh_s": REFRESH_S if session is not None and not ready else 0,
        "error": error,
    }
    return render(request, "kiosk/kiosk.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def kiosk(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _page(request)
    if not _desktops(request):  # a second press (or a reload of the form) starts nothing more
        try:
            notebook_request(user=request.user, profile=settings.KIOSK_PROFILE)
        except PortalError as exc:
            return _page(request, error=exc.message, status=exc.status)
    return redirect("kiosk")


@require_POST
def kiosk_sign_out(request: HttpRequest) -> HttpResponse:
    """Stop the person's desktop (it is theirs: nobody else's is touched) and end their session here."""
    if request.user.is_authenticated:
        for session in _desktops(request):
            with contextlib.suppress(PortalError):  # already ending: nothing left to stop
                notebook_stop(user=request.user, session=session)
        logout(request)
    return redirect_to_login(reverse("kiosk"))  # the seat's sign-in, for the next person
