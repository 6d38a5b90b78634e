"""The team desk's prompts as first deployed; the tests write edited copies."""

from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini")
REPLY = Prompt("reply", "Write a friendly reply about {ticket}", model="gpt-4o-mini")
