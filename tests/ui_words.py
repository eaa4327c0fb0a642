"""The words that tell which language a page is in, for the checks that a page in one language shows none of the
other's: the test client's (tests/portal/test_translations.py, on the HTML) and the browser sweep's
(tests/browser/test_accessibility.py, on what Chromium shows). One list, so both look for the same words."""

from __future__ import annotations

import re

ENGLISH_UI = [
    "Sign out", "Sign in", "Dashboard", "Reservations", "Jobs", "Usage", "My usage", "Submit", "Cancel", "Start",
    "Save", "Nodes", "Live GPUs", "Your account", "Your week", "Book nodes", "Download CSV", "Status", "Profiles",
    "Courses", "Times are shown", "GPU-hours", "Hello", "Week of", "Language", "teacher", "student",
]  # fmt: skip
PORTUGUESE_UI = [
    "Sair", "Entrar", "Painel", "Reservas", "Tarefas", "Meu uso", "Enviar", "Cancelar", "Iniciar", "Salvar", "Nós",
    "Sua conta", "Sua semana", "Reservar nós", "Disciplinas", "Horas de GPU", "horas de GPU", "Olá", "Idioma",
]  # fmt: skip
# The words a page in each language must not show: the other language's.
FOREIGN = {"en": PORTUGUESE_UI, "pt-BR": ENGLISH_UI}


def found(words: list[str], text: str) -> list[str]:
    """The words that occur in `text` as words (not as a part of a longer one: "Start" is not in "Starting")."""
    return [word for word in words if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text)]
