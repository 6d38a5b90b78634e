"""RT201: calling a language model from orchestration code instead of a recorded step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replaytest.lint.rule import Invalid, Option, Rule
from replaytest.model_clients import model_calls


def _model_calls() -> dict[str, str]:
    # The catalogue is shared with replay (a recorded model step without a prompt record is noted).
    return {name: "" for name in model_calls()}


class CallsModelOutsideStep(Rule):
    """
    ## What it does
    Finds LLM client calls in orchestration code: OpenAI / AsyncOpenAI (`chat.completions.create`,
    `responses.create`), Anthropic (`messages.create`), LiteLLM (`completion`, `acompletion`), LangChain
    chat models (`invoke`, `ainvoke`, `stream`, `batch` on `ChatOpenAI`, `ChatAnthropic`,
    `init_chat_model(...)`), Google GenAI (`client.models.generate_content`), Bedrock runtime
    (`invoke_model`, `converse`), embedding models (`OpenAIEmbeddings().embed_query`,
    `aembed_documents`), agents (pydantic-ai `Agent(...).run`, LangChain and LangGraph prebuilt agents'
    `invoke`), and the names listed in the `calls` option — also on a client or model a project function
    returns (`get_model().ainvoke(...)`).

    ## Why is this bad?
    A model answers differently every time. Called from orchestration code the answer is not recorded,
    so a replay asks again, gets another answer and takes another path; it also pays for the call again.

    ## Example
    ```python
    answer = client.chat.completions.create(model="gpt-4o", messages=messages)
    ```

    ## Use instead
    ```python
    answer = await workflow.execute_activity(ask_model, messages, start_to_close_timeout=timedelta(minutes=1))
    ```
    """

    code = "RT201"
    name = "calls-model-outside-step"
    category = "model-call"
    summary = "Language-model call in orchestration code"
    what = "calls a language model outside a recorded step"
    calls = _model_calls()

    options = (
        Option("calls", "list[qualified-name]", (), "extra qualified names of calls that are model calls, e.g. "
               "\"acme.llm.complete\"; also the older top-level model-calls"),
    )

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        super().__init__(settings)
        # An instance attribute shadows the class table for this run's configuration only.
        vars(self)["calls"] = {**type(self).calls, **{name: "" for name in self.settings["calls"]}}

    VALID = (
        """
from openai import OpenAI
from temporalio import activity

@activity.defn
async def ask(question: str) -> str:
    return OpenAI().chat.completions.create(model="m", messages=[]).choices[0].message.content
""",
    )
    INVALID = (
        Invalid(
            """
from openai import AsyncOpenAI
from temporalio import workflow

@workflow.defn
class Agent:
    @workflow.run
    async def run(self, question: str) -> str:
        client = AsyncOpenAI()
        reply = await client.chat.completions.create(model="m", messages=[])
        return reply.choices[0].message.content
""",
            line=9, column=23,
            message='client.chat.completions.create() calls a language model outside a recorded step in workflow code; use an activity (workflow.execute_activity)',
        ),
        Invalid(
            """
from langchain_openai import ChatOpenAI
from langgraph.func import entrypoint

llm = ChatOpenAI(model="gpt-4o")

@entrypoint()
def agent(question: str) -> str:
    return llm.invoke(question).content
""",
            line=8, column=12,
            message='llm.invoke() calls a language model outside a recorded step in workflow code; use a @task function',
        ),
        Invalid(
            """
import boto3
from dbos import DBOS

@DBOS.workflow()
def summarise(text: str) -> dict:
    runtime = boto3.client("bedrock-runtime")
    return runtime.converse(modelId="m", messages=[])
""",
            line=7, column=12,
            message='runtime.converse() calls a language model outside a recorded step in workflow code; use a @DBOS.step() function',
        ),
    )
