"""The async report agents whose nested research entrypoints now call ``search_archive`` instead of
``search_web`` (a renamed task inside the nested run)."""

from __future__ import annotations

from langgraph.func import entrypoint, task

from lg_apps.research import write_report
from lg_apps.tasks import _effect


@task
def search_archive(question: str) -> list:
    _effect(f"search_archive {question}")
    return [f"source about {question}"]


@entrypoint()
def research_agent(question: str) -> dict:
    return {"question": question, "sources": search_archive(question).result()}


@entrypoint()
async def async_research_agent(question: str) -> dict:
    return {"question": question, "sources": await search_archive(question)}


@entrypoint()
async def async_report_agent(question: str) -> str:
    findings = await research_agent.ainvoke(question)
    return await write_report(question, findings)


@entrypoint()
async def async_desk_agent(question: str) -> str:
    findings = await async_research_agent.ainvoke(question)
    return await write_report(question, findings)
