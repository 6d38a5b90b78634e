"""The model desk's prompts (one per line, so a test can edit one by its text or model)."""

from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini", params={"temperature": 0.2})
REPLY = Prompt("reply", "Write a friendly reply about {ticket}, routed to {route}", model="gpt-4o-mini", params={"temperature": 0.2})
