"""The support agent's two prompts: triage is used before the agent waits for a reviewer, reply after."""

from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}")
REPLY = Prompt("reply", "Write a friendly reply to the customer, given: {summary}")
