"""A newsroom agent on DBOS: researches a topic, drafts a brief and publishes it; ``live_brief`` also
streams each source it reads to the editor's screen (``DBOS.write_stream``), which replay does not
stand in for. ``NEWSROOM_EFFECTS`` names a file that gets a line every time a step body really runs."""

from __future__ import annotations

import os

from dbos import DBOS

EFFECTS = os.environ.get("NEWSROOM_EFFECTS", "newsroom-effects.log")
SOURCES = {
    "markets": ["central bank minutes", "earnings calls"],
    "weather": ["met office bulletin"],
    "elections": ["polling stations", "turnout figures", "candidate statements"],
}


def effect(what: str) -> None:
    with open(EFFECTS, "a", encoding="utf-8") as log:
        log.write(what + "\n")


@DBOS.step()
def research(topic: str) -> list:
    effect(f"research {topic}")
    return SOURCES.get(topic, [])


@DBOS.step()
def draft(topic: str, sources: list) -> str:
    effect(f"draft {topic}")
    return f"{topic.title()}: " + "; ".join(sources)


@DBOS.step()
def publish(text: str) -> dict:
    effect(f"publish {text[:20]}")
    return {"published": True, "chars": len(text)}


@DBOS.workflow()
def brief(topic: str) -> dict:
    sources = research(topic)
    text = draft(topic, sources)
    DBOS.sleep(0.05)  # the editor's embargo before publishing
    return publish(text)


@DBOS.workflow()
def live_brief(topic: str) -> dict:
    sources = research(topic)
    for source in sources:
        DBOS.write_stream("reading", {"topic": topic, "source": source})
    DBOS.close_stream("reading")
    return publish(draft(topic, sources))
