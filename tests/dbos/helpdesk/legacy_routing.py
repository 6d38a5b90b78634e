"""The old escalation rules, imported only inside the escalation step's body. Importing this module
appends a line to the file named by ``HELPDESK_IMPORT_LOG``, so a test can tell whether anything
imported it."""

from __future__ import annotations

import os

with open(os.environ.get("HELPDESK_IMPORT_LOG", "helpdesk-imports.log"), "a", encoding="utf-8") as _log:
    _log.write(f"{__name__} imported\n")


class Escalation:
    """Who takes over a ticket and why (a plain class: pickle records its instance dict)."""

    def __init__(self, team: str, reason: str) -> None:
        self.team = team
        self.reason = reason
