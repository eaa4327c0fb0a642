"""Which chat/webhook (apprise) URLs a person may give: a kind apprise knows, and no host on loopback or a private,
link-local or reserved range unless NOTIFY_ALLOW_PRIVATE_URLS names it (the worker would otherwise call inside the
lab's network for whoever typed the URL: SSRF). Checked when the URL is saved and again before each send (a name
may resolve elsewhere later)."""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.utils.translation import gettext as _

from accounts.errors import InvalidInput

# Services at their vendor's own address: the URL carries tokens, not a host the person chooses.
VENDOR_SCHEMES = {"slack", "discord", "msteams", "tgram", "zulip", "pover", "pbul", "signal", "signals", "ifttt"}
# Services (and plain webhooks) at a host the person chooses: that host is checked.
HOSTED_SCHEMES = {
    "json", "jsons", "xml", "xmls", "form", "forms", "matrix", "matrixs", "mmost", "mmosts", "rocket", "rockets",
    "ntfy", "ntfys", "gotify", "gotifys", "http", "https",
}  # fmt: skip


def _refuse(why: str) -> InvalidInput:
    return InvalidInput(why, fields={"url": why})


def _allowed_private(address: ipaddress._BaseAddress) -> bool:
    return any(address in network for network in settings.NOTIFY_ALLOW_PRIVATE_URLS)


def _public(address: ipaddress._BaseAddress) -> bool:
    return address.is_global and not address.is_multicast


def check_host(host: str) -> None:
    """Raise InvalidInput unless every address `host` resolves to is public (or allowed by the admin)."""
    host = host.strip("[]")
    try:
        addresses = {ipaddress.ip_address(host)}
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            raise _refuse(_("The address's host cannot be found.")) from None
        addresses = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}
    for address in addresses:
        if not _public(address) and not _allowed_private(address):
            raise _refuse(_("Addresses inside the lab's network or on this machine are not allowed."))


def chat_url_check(url: str) -> str:
    """The URL, stripped, if the portal may send to it; else InvalidInput with a sentence for the person."""
    import apprise

    url = (url or "").strip()
    if len(url) > 500:
        raise _refuse(_("The address is too long."))
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in VENDOR_SCHEMES | HOSTED_SCHEMES:
        raise _refuse(
            _("Give a Slack, Discord, Teams, Telegram, Matrix, Mattermost, Rocket.Chat, ntfy or webhook address.")
        )
    if apprise.Apprise.instantiate(url) is None:
        raise _refuse(_("This address is not one the portal can send to."))
    if scheme in HOSTED_SCHEMES:
        if not parts.hostname:
            raise _refuse(_("The address has no host."))
        check_host(parts.hostname)
    return url
