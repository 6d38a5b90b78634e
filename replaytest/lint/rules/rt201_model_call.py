"""RT201: calling a language model from orchestration code instead of a recorded step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from replaytest.lint.rule import Invalid, Option, Rule

_OPENAI_CLIENTS = ("openai.OpenAI", "openai.AsyncOpenAI", "openai.AzureOpenAI", "openai.AsyncAzureOpenAI")
_OPENAI_METHODS = (
    "chat.completions.create", "chat.completions.parse", "chat.completions.stream", "beta.chat.completions.parse",
    "responses.create", "responses.parse", "responses.stream", "completions.create", "embeddings.create",
)
_ANTHROPIC_CLIENTS = (
    "anthropic.Anthropic", "anthropic.AsyncAnthropic", "anthropic.AnthropicBedrock", "anthropic.AnthropicVertex",
    "anthropic.AsyncAnthropicBedrock", "anthropic.AsyncAnthropicVertex",
)
_ANTHROPIC_METHODS = ("messages.create", "messages.stream", "messages.parse", "beta.messages.create", "completions.create")
_LANGCHAIN_MODELS = (
    "langchain_openai.ChatOpenAI", "langchain_openai.AzureChatOpenAI", "langchain_openai.OpenAI",
    "langchain_anthropic.ChatAnthropic", "langchain_google_genai.ChatGoogleGenerativeAI",
    "langchain_google_vertexai.ChatVertexAI", "langchain_aws.ChatBedrock", "langchain_aws.ChatBedrockConverse",
    "langchain_mistralai.ChatMistralAI", "langchain_groq.ChatGroq", "langchain_ollama.ChatOllama",
    "langchain_community.chat_models.ChatOpenAI", "langchain_community.chat_models.ChatOllama",
    "langchain.chat_models.init_chat_model", "langchain.chat_models.base.init_chat_model",
)
_LANGCHAIN_METHODS = ("invoke", "ainvoke", "stream", "astream", "batch", "abatch", "generate", "agenerate", "predict")
_LANGCHAIN_WRAPPERS = ("", ".bind_tools", ".with_structured_output", ".bind", ".with_retry", ".with_config")
_LANGCHAIN_EMBEDDINGS = (
    "langchain_openai.OpenAIEmbeddings", "langchain_openai.AzureOpenAIEmbeddings", "langchain_ollama.OllamaEmbeddings",
    "langchain_google_genai.GoogleGenerativeAIEmbeddings", "langchain_aws.BedrockEmbeddings",
    "langchain_mistralai.MistralAIEmbeddings", "langchain_huggingface.HuggingFaceEmbeddings",
    "langchain_community.embeddings.OllamaEmbeddings", "langchain_community.embeddings.OpenAIEmbeddings",
    "langchain_cohere.CohereEmbeddings", "langchain_voyageai.VoyageAIEmbeddings",
)
_EMBEDDING_METHODS = ("embed_query", "embed_documents", "aembed_query", "aembed_documents")
# Agents run model calls (and tools) inside: pydantic-ai ``Agent(...).run``, LangChain / LangGraph agents.
_AGENTS = {
    "pydantic_ai.Agent": ("run", "run_sync", "run_stream", "iter"),
    "langchain.agents.create_agent": _LANGCHAIN_METHODS,
    "langchain.agents.AgentExecutor": _LANGCHAIN_METHODS,
    "langchain.agents.initialize_agent": _LANGCHAIN_METHODS,
    "langgraph.prebuilt.create_react_agent": _LANGCHAIN_METHODS,
}
_GENAI_METHODS = ("models.generate_content", "models.generate_content_stream", "models.embed_content")
_BEDROCK_METHODS = ("invoke_model", "invoke_model_with_response_stream", "converse", "converse_stream")
_BEDROCK_CLIENTS = ("boto3.client[bedrock-runtime]", "boto3.Session.client[bedrock-runtime]",
                    "boto3.session.Session.client[bedrock-runtime]")


def _model_calls() -> dict[str, str]:
    names = [f"{c}.{m}" for c in _OPENAI_CLIENTS for m in _OPENAI_METHODS]
    names += [f"openai.{m}" for m in _OPENAI_METHODS] + ["openai.ChatCompletion.create", "openai.Completion.create"]
    names += [f"{c}.{m}" for c in _ANTHROPIC_CLIENTS for m in _ANTHROPIC_METHODS]
    names += [f"{c}{w}.{m}" for c in _LANGCHAIN_MODELS for w in _LANGCHAIN_WRAPPERS for m in _LANGCHAIN_METHODS]
    names += [f"{c}.{m}" for c in _LANGCHAIN_EMBEDDINGS for m in _EMBEDDING_METHODS]
    names += [f"{agent}.{m}" for agent, methods in _AGENTS.items() for m in methods]
    names += [f"litellm.{m}" for m in ("completion", "acompletion", "embedding", "aembedding", "text_completion",
                                       "responses", "aresponses")]
    names += [f"litellm.Router.{m}" for m in ("completion", "acompletion")]
    names += [f"google.genai.Client.{m}" for m in _GENAI_METHODS]
    names += [f"google.genai.Client.aio.{m}" for m in _GENAI_METHODS]
    names += ["google.generativeai.GenerativeModel.generate_content",
              "google.generativeai.GenerativeModel.generate_content_async"]
    names += [f"{c}.{m}" for c in _BEDROCK_CLIENTS for m in _BEDROCK_METHODS]
    names += ["cohere.Client.chat", "cohere.ClientV2.chat", "cohere.AsyncClient.chat", "mistralai.Mistral.chat.complete",
              "groq.Groq.chat.completions.create", "groq.AsyncGroq.chat.completions.create", "ollama.chat",
              "ollama.generate", "ollama.Client.chat", "ollama.AsyncClient.chat"]
    return {name: "" for name in names}


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
