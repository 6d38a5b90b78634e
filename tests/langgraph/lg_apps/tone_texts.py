"""The tone agent's prompts (one per line, so a test can edit one by its text or parameters)."""

from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini", params={"temperature": 0.2})
REPLY = Prompt("reply", "Reply about {queue}; the reviewer said {review}", model="gpt-4o-mini", params={"temperature": 0.2})
TONE = Prompt("tone", "Be warm and concise.", model="gpt-4o-mini", params={"temperature": 0.2})
