"""The lab's locale: the languages the portal speaks, the one it starts in, where the translations are, the lab's
time zone and currency, and the number and date formats of each language (portal/formats/<language>/formats.py).

The lab decides these here, never in code: LAB_TIME_ZONE, LAB_CURRENCY, LAB_LANGUAGE. A person's language follows
their browser (Accept-Language) until they choose one on the account page (accounts.User.language)."""

from __future__ import annotations

from accounts.env import envchoice, envstr

# base.py: the checkout.
from portal.settings.base import BASE_DIR

USE_I18N = True
# The languages a person may choose (the account page) and the browser may ask for. Another one (pt-PT, say) is
# a translation file away: locale/pt_PT/LC_MESSAGES/django.po and a line here.
LANGUAGES = [("en", "English"), ("pt-br", "Português (Brasil)")]
# The language of a person whose browser asks for none the portal speaks.
LANGUAGE_CODE = envchoice("LAB_LANGUAGE", "en", tuple(code for code, _ in LANGUAGES))
LOCALE_PATHS = [BASE_DIR / "locale"]
# Dates and numbers as each language writes them (portal/formats/en/, portal/formats/pt_BR/); the one module that
# formats times (accounts/timefmt.py) reads its formats from them.
FORMAT_MODULE_PATH = ["portal.formats"]

# The lab's time zone: times are entered and shown in it, and stored in UTC.
TIME_ZONE = envstr("LAB_TIME_ZONE", "Europe/Berlin")
USE_TZ = True
# Prices and costs (budgets) are in this currency: an ISO code or a symbol, shown as is. USAGE_CURRENCY is its
# older name, still read.
LAB_CURRENCY = envstr("LAB_CURRENCY", envstr("USAGE_CURRENCY", "EUR"))
