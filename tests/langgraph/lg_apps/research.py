"""A report agent that invokes another ``@entrypoint`` (a research agent) from its own body: a nested
entrypoint, whose task calls LangGraph checkpoints in the nested run's own namespace."""

from __future__ import annotations

from langgraph.func import entrypoint, task

from lg_apps.tasks import _effect


@task
def search_web(question: str) -> list:
    _effect(f"search_web {question}")
    return [f"source about {question}"]


@entrypoint()
def research_agent(question: str) -> dict:
    return {"question": question, "sources": search_web(question).result()}


@task
def write_report(question: str, findings: dict) -> str:
    _effect(f"write_report {question}")
    return f"report on {question} from {len(findings['sources'])} source(s)"


@entrypoint()
def report_agent(question: str) -> str:
    findings = research_agent.invoke(question)
    return write_report(question, findings).result()


@task
def gather(question: str) -> dict:
    _effect(f"gather {question}")
    return research_agent.invoke(question)


@entrypoint()
def briefing_agent(question: str) -> str:
    findings = gather(question).result()
    return write_report(question, findings).result()


@entrypoint()
async def async_report_agent(question: str) -> str:
    findings = await research_agent.ainvoke(question)
    return await write_report(question, findings)


@entrypoint()
async def async_research_agent(question: str) -> dict:
    return {"question": question, "sources": await search_web(question)}


@entrypoint()
async def async_desk_agent(question: str) -> str:
    findings = await async_research_agent.ainvoke(question)
    return await write_report(question, findings)
