"""The prompt desk's prompts: triage is used by the node that runs first, reply by the node a thread parks in."""

from replaytest.prompts import Prompt

TRIAGE = Prompt("triage", "Sort this ticket into billing, shipping or other: {ticket}")
REPLY = Prompt("reply", "Write a friendly reply to the customer about: {ticket}")
