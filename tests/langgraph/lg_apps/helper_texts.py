"""The helper agent's prompt as first deployed; the tests write edited copies."""

from replaytest.prompts import Prompt

REPLY = Prompt("reply", "Write a friendly reply about: {summary}", model="gpt-4o-mini")
