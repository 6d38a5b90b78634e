"""Journal workflows whose plain steps (``ctx.step``: no prompt version recorded) reach a model through a
project factory, or through a client the project declares in RT201's ``calls`` option."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from replaytest.journal import workflow


def get_model() -> Any:
    llm = FakeListChatModel(responses=["solved"])
    return llm


def make_llm() -> Any:
    # A runnable wrapper around the model: its own classes are LangChain's RunnableBinding, no model.
    return FakeListChatModel(responses=["solved"]).bind(stop=["\n"])


MODEL = make_llm()


class InHouseClient:
    """A model client of the project's own, unknown to the catalogue."""

    def complete(self, text: str) -> str:
        return f"reply to {text}"


IN_HOUSE = InHouseClient()


def ask_local_factory(text: str) -> str:
    llm = get_model()
    return str(llm.invoke(text).content)  # [local factory]


def ask_called_factory(text: str) -> str:
    return str(get_model().invoke(text).content)  # [called factory]


def ask_module_factory(text: str) -> str:
    return str(MODEL.invoke(text).content)  # [module factory]


def ask_in_house(text: str) -> str:
    return IN_HOUSE.complete(text)  # [in-house client]


def file_ticket(ticket: str) -> str:
    return f"filed {ticket}"


@workflow(name="factory_agent")
def factory_agent(ctx: Any, ticket: str) -> dict:
    return {
        "filed": ctx.step("file", file_ticket, ticket),
        "local": ctx.step("local", ask_local_factory, ticket),
        "called": ctx.step("called", ask_called_factory, ticket),
        "module": ctx.step("module", ask_module_factory, ticket),
    }


@workflow(name="in_house_agent")
def in_house_agent(ctx: Any, ticket: str) -> dict:
    return {"filed": ctx.step("file", file_ticket, ticket), "reply": ctx.step("reply", ask_in_house, ticket)}
