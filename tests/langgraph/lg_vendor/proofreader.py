"""A proofreading ``@entrypoint`` shipped by another package than the app that invokes it."""

from __future__ import annotations

from langgraph.func import entrypoint, task

from lg_apps.tasks import _effect


@task
def proofread(text: str) -> str:
    _effect(f"proofread {text}")
    return text.capitalize()


@entrypoint()
def proofreader(text: str) -> str:
    return proofread(text).result()
