"""The model desk's prompts as first deployed (v1): both model calls on gpt-4o-mini. The tests write
other versions of this file (the reply call on gpt-4.1, say) to deploy or roll back."""

from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}", model="gpt-4o-mini", params={"temperature": 0.2})
REPLY = Prompt("reply", "Write a friendly reply to the customer, given: {summary}", model="gpt-4o-mini", params={"temperature": 0.7})
