"""The language-model client calls replaytest knows (OpenAI, Anthropic, LangChain chat models, LiteLLM,
Google GenAI, Bedrock, agents …), as qualified names, and ``model_call_site``: the first such call in a
live function's body.

Lint matches the names statically (RT201, ``calls-model-outside-step``); replay asks ``model_call_site``
whether a recorded step, task or node that recorded no prompt version calls a model, to say so in a note
(a prompt fetched or built at run time without ``Prompt.fetched``/``use_prompt`` is not compared). Both
sides read the one table here, which imports only the standard library and serves every layer.

``model_call_site`` reads the function's source and resolves each call's receiver through the function's
globals and closure (live objects, no import of any client library): ``client.chat.completions.create``
with a module-level ``client = OpenAI()`` is ``openai.OpenAI.chat.completions.create`` (the instance's
classes, by their public module), ``llm.invoke`` on any LangChain language model (a class whose
bases include ``langchain_core.language_models.BaseLanguageModel``) is a model call whatever its
provider, and a local ``llm = ChatOpenAI(...)`` is followed to its class. Project helper functions the
body calls are followed (two levels), so ``answer = ask(question)`` finds the model call inside ``ask``.
A model a project factory returns is followed to what the factory returns (two levels): ``llm =
get_model()`` in the body, ``get_model().invoke(...)``, and a module-level ``MODEL = make_llm()`` whose
live value is not itself a known model (``ChatOpenAI(...).bind_tools(tools)`` returns a runnable wrapper),
through the module's assignment and its ``from … import``. ``extra_calls`` adds names a project declares
(RT201's ``calls`` option, which replay receives as ``ReplayOptions.model_calls``).
"""

from __future__ import annotations

import ast
import os
import sys
import types
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from replaytest.records import FrozenRecord

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
LANGCHAIN_METHODS = ("invoke", "ainvoke", "stream", "astream", "batch", "abatch", "generate", "agenerate", "predict")
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
    "langchain.agents.create_agent": LANGCHAIN_METHODS,
    "langchain.agents.AgentExecutor": LANGCHAIN_METHODS,
    "langchain.agents.initialize_agent": LANGCHAIN_METHODS,
    "langgraph.prebuilt.create_react_agent": LANGCHAIN_METHODS,
}
_GENAI_METHODS = ("models.generate_content", "models.generate_content_stream", "models.embed_content")
_BEDROCK_METHODS = ("invoke_model", "invoke_model_with_response_stream", "converse", "converse_stream")
_BEDROCK_CLIENTS = ("boto3.client[bedrock-runtime]", "boto3.Session.client[bedrock-runtime]",
                    "boto3.session.Session.client[bedrock-runtime]")
# Every LangChain chat or text model derives from this class: found among an instance's classes at run
# time, it makes ``invoke`` & co. a model call for providers the table does not list.
_LANGCHAIN_BASE = "langchain_core.language_models.BaseLanguageModel"


def model_calls() -> tuple[str, ...]:
    """The qualified names of the model-client calls (a client class or factory, then the attributes)."""
    names = [f"{c}.{m}" for c in _OPENAI_CLIENTS for m in _OPENAI_METHODS]
    names += [f"openai.{m}" for m in _OPENAI_METHODS] + ["openai.ChatCompletion.create", "openai.Completion.create"]
    names += [f"{c}.{m}" for c in _ANTHROPIC_CLIENTS for m in _ANTHROPIC_METHODS]
    names += [f"{c}{w}.{m}" for c in _LANGCHAIN_MODELS for w in _LANGCHAIN_WRAPPERS for m in LANGCHAIN_METHODS]
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
    return tuple(names)


@lru_cache(maxsize=1)
def _runtime_names() -> frozenset[str]:
    return frozenset(model_calls()) | {f"{_LANGCHAIN_BASE}{w}.{m}" for w in _LANGCHAIN_WRAPPERS for m in LANGCHAIN_METHODS}


class ModelCallSite(FrozenRecord):
    """Where a function's body calls a model: the file, the line and the call as written."""

    path: str
    line: int
    call: str

    def __init__(self, path: str, line: int, call: str) -> None:
        self.__dict__.update(path=path, line=line, call=call)

    def __str__(self) -> str:
        name = self.path.replace("\\", "/").rsplit("/", 1)[-1]
        return f"{self.call} at {name}:{self.line}"


def model_call_site(fn: Any, *, depth: int = 2, extra_calls: Iterable[str] = ()) -> ModelCallSite | None:
    """The first model-client call in ``fn``'s body (or in a project helper it calls, ``depth`` levels
    down), or None: also when the source cannot be read (a builtin, code built at run time). ``extra_calls``:
    qualified names that count as model calls besides the catalogue's."""
    import inspect  # replay only, as below: lint imports this module for the catalogue on every run

    fn = inspect.unwrap(fn) if callable(fn) else fn
    if not isinstance(fn, types.FunctionType):
        return None
    known = _runtime_names() | frozenset(extra_calls)
    return _site(fn, depth, set(), known)


def _namespace(fn: types.FunctionType) -> dict[str, Any]:
    """``fn``'s globals with its closure's bound variables over them."""
    namespace: dict[str, Any] = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                namespace[name] = cell.cell_contents
            except ValueError:  # an empty cell: the name is not bound yet
                continue
    return namespace


def _site(fn: types.FunctionType, depth: int, seen: set[int], known: frozenset[str]) -> ModelCallSite | None:
    if id(fn.__code__) in seen:
        return None
    seen.add(id(fn.__code__))
    parsed = _parsed(fn.__code__)
    if parsed is None:
        return None
    body, first_line, path = parsed
    namespace = _namespace(fn)
    locals_ = _local_assignments(body)
    helpers: list[tuple[ast.Call, types.FunctionType]] = []
    for call in sorted(_calls(body), key=lambda node: (node.lineno, node.col_offset)):
        for name in _call_names(call.func, namespace, locals_, module=fn.__module__):
            if name in known:
                return ModelCallSite(path, first_line + call.lineno - 1, ast.unparse(call.func))
        target = _live(call.func, namespace)
        if isinstance(target, types.FunctionType) and _is_application(target):
            helpers.append((call, target))
    if depth > 0:
        for _call, helper in helpers:
            inner = _site(helper, depth - 1, seen, known)
            if inner is not None:
                return inner
    return None


@lru_cache(maxsize=512)
def _parsed(code: types.CodeType) -> tuple[ast.AST, int, str] | None:
    try:
        import inspect  # replay only: lint reads the catalogue above, on every run
        import textwrap

        lines, first_line = inspect.getsourcelines(code)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None
    return tree, first_line, code.co_filename


def _calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def _local_assignments(tree: ast.AST) -> dict[str, ast.expr]:
    """``{name: value}`` of the body's plain ``name = value`` assignments (the last one wins)."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
    return found


def _call_names(
    func: ast.expr, namespace: dict[str, Any], locals_: dict[str, ast.expr], hops: int = 3, *,
    module: str | None = None, follow: int = 2,
) -> list[str]:
    """The qualified names ``func`` may denote: its receiver's names (a live object's classes, a local
    assignment followed to what it calls, what a project factory returns, the module-level assignment of
    a live value) with the attribute chain appended. ``module``: the module whose globals ``namespace``
    holds; ``follow``: how many project factories and assignments deep to look."""
    attrs: list[str] = []
    node = func
    called = False  # whether the receiver name itself is called: ``get_model().invoke``
    while True:
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
            called = False
        elif isinstance(node, ast.Call):
            node = node.func  # ``ChatOpenAI(...).invoke``, ``llm.bind_tools(...).invoke``: the callee's names
            called = True
        elif isinstance(node, ast.Await):
            node = node.value
        else:
            break
    suffix = "".join("." + attr for attr in reversed(attrs))
    if not isinstance(node, ast.Name):
        return []
    if node.id in locals_ and hops > 0:
        return [base + suffix for base in _call_names(locals_[node.id], namespace, locals_, hops - 1,
                                                      module=module, follow=follow)]
    if node.id not in namespace:
        return []
    value = namespace[node.id]
    names = _object_names(value)
    if follow > 0 and called and isinstance(value, types.FunctionType) and _is_application(value):
        # A project factory: the model is what it returns (``llm = get_model()``).
        names += _returned_names(value, follow - 1)
    elif follow > 0 and not called and module is not None and not isinstance(value, (type, types.ModuleType, types.FunctionType)):
        # A live value whose classes say nothing (a runnable wrapper around a model, say): how the module made it.
        names += _assigned_names(module, node.id, follow - 1)
    return [base + suffix for base in names]


def _own_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of the functions and classes nested in it."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield child
        yield from _own_nodes(child)


def _returned_names(fn: types.FunctionType, follow: int) -> list[str]:
    """The qualified names of what a project function returns (each ``return`` of its own body)."""
    parsed = _parsed(fn.__code__)
    if parsed is None:
        return []
    tree = parsed[0]
    definition = next((node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if definition is None:
        return []
    namespace, locals_ = _namespace(fn), _local_assignments(definition)
    names: list[str] = []
    for node in _own_nodes(definition):
        if isinstance(node, ast.Return) and node.value is not None:
            names += _call_names(node.value, namespace, locals_, module=fn.__module__, follow=follow)
    return names


def _assigned_names(module_name: str, name: str, follow: int) -> list[str]:
    """The qualified names of the value a module's top-level ``name = …`` assigns, followed through a
    ``from … import name`` into the module it comes from."""
    module = sys.modules.get(module_name)
    top = _module_tree(module_name)
    if module is None or top is None:
        return []
    for node in reversed(top.body):  # the last top-level binding wins
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return _call_names(node.value, vars(module), {}, module=module_name, follow=follow)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == name and node.value:
            return _call_names(node.value, vars(module), {}, module=module_name, follow=follow)
        if isinstance(node, ast.ImportFrom) and follow > 0:
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    source = _imported_module(module_name, node)
                    return _assigned_names(source, alias.name, follow - 1) if source else []
    return []


def _imported_module(importer: str, node: ast.ImportFrom) -> str | None:
    if not node.level:
        return node.module
    package = sys.modules.get(importer)
    base = getattr(package, "__package__", None) or importer.rpartition(".")[0]
    parts = base.split(".")
    if node.level - 1 >= len(parts) + (1 if not base else 0):
        return None
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _module_tree(module_name: str) -> ast.Module | None:
    """The parsed source of an application module (None for a library's or one without source)."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    top = module_name.partition(".")[0]
    if (module is None or not isinstance(path, str) or top == "replaytest" or top in sys.stdlib_module_names
            or "site-packages" in path or "dist-packages" in path):
        return None
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    return _parsed_file(path, stamp)


@lru_cache(maxsize=128)
def _parsed_file(path: str, stamp: int) -> ast.Module | None:
    """A source file parsed, cached per modification time (a module rewritten and imported again is read again)."""
    del stamp
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read())
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _live(func: ast.expr, namespace: dict[str, Any]) -> Any:
    """The object a plain ``name(...)`` or ``module.name(...)`` call calls, else None."""
    import inspect

    chain: list[str] = []
    while isinstance(func, ast.Attribute):
        chain.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in namespace:
        return None
    obj = namespace[func.id]
    for attr in reversed(chain):
        try:
            obj = inspect.getattr_static(obj, attr)
        except AttributeError:
            return None
    return obj


def _object_names(obj: Any) -> list[str]:
    """Qualified names of a live object: a module's name; a class's or function's (under its defining
    module and each public parent of it, since a library's classes live in private modules); a class's
    and an instance's classes (all of them, so a subclass of a known client counts)."""
    if isinstance(obj, types.ModuleType):
        return [obj.__name__]
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        return _defined_names(obj)
    names: list[str] = []
    for cls in (obj if isinstance(obj, type) else type(obj)).__mro__:
        names += _defined_names(cls)
    return names


def _defined_names(obj: Any) -> list[str]:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return []
    parts = module.split(".")
    # ``openai._client.OpenAI`` is exported as ``openai.OpenAI``; ``langchain_core.language_models.base.
    # BaseLanguageModel`` as ``langchain_core.language_models.BaseLanguageModel``: every parent module.
    return [".".join(parts[:end] + [qualname]) for end in range(len(parts), 0, -1)]


def _is_application(fn: types.FunctionType) -> bool:
    module = fn.__module__ or ""
    top = module.partition(".")[0]
    if not top or top == "replaytest" or top in sys.stdlib_module_names:
        return False
    path = fn.__code__.co_filename
    return "site-packages" not in path and "dist-packages" not in path
