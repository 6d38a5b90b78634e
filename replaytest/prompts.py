"""``Prompt`` — a named, versioned prompt template any engine's code can use — and prompt manifests.

A ``Prompt``'s text version is the SHA-256 of its template unless one is given (``version="v2"``). A
model call's output depends on the model and its sampling parameters as much as on the text, so a
``Prompt`` may also declare them (``model="gpt-4o-mini", params={"temperature": 0.2}``): what is
recorded and compared is then its ``full_version``, the text version with the model and a digest of the
parameters appended (``sha256:… model=gpt-4o-mini params=3f2a9c1b0d4e5f60``), readable in a manifest
and in a report without any other record. A prompt that declares neither has ``full_version ==
version``, so histories recorded before models were part of a version compare as they did.
``describe_version_change`` says what changed between two full versions ("model gpt-4o-mini →
gpt-4.1"). ``Prompt.fetched`` builds one at run time from a registry's text.

What a model call used is recorded per engine (the journal's ``ctx.model(..., prompt=P)``, a header on a
Temporal activity through ``replaytest.plugins.temporal.prompts``); replay compares it with the
current ``Prompt`` of that name (``prompt-drift``).

A *prompt manifest* is ``{name: version}`` for every prompt a workflow can use, recorded when a run
starts, so that replaying an unfinished run can say which prompts it has not reached yet changed since
it started. ``prompt_manifest(workflow)`` collects it without any static analysis: it follows the names
the workflow's code objects load (``co_names``) through the functions' globals, closures, defaults,
classes and module attributes those names reach, transitively, and keeps the ``Prompt`` objects found.
Only code of the application is followed (not the standard library, installed packages, temporalio or
replaytest), each object once; the result is cached per workflow object. ``uses_prompts(P, ...)``
declares prompts the walk cannot see (built from data at run time, say).

``use_prompt(P)`` marks the engine calls made inside its block as calls that use ``P``. On engines
that store nothing per call (DBOS, LangGraph) it records nothing: replay reads it from the current code
to know which recorded call used which prompt, whose version is then the one of the run's manifest.
"""

from __future__ import annotations

import contextlib
import contextvars
import dis
import functools
import hashlib
import json
import re
import sys
import types
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from replaytest.history.model import PromptRef

DECLARED = "__replaytest_prompts__"  # attribute ``uses_prompts`` sets on a workflow
_SKIPPED_TOP = frozenset({"replaytest", "temporalio", "builtins"})
_MAX_CONTAINER = 256  # items looked at per list/tuple/dict/set global (prompt tables are small)
T = TypeVar("T")


@dataclass(frozen=True)
class Prompt:
    """A prompt template with a name, a text version (by default ``sha256:`` of the template text) and,
    optionally, the model and the output-changing parameters (temperature, top_p, max tokens, tools,
    response schema: any JSON) the call that renders it uses."""

    name: str
    template: str
    version: str = ""
    model: str | None = None
    # Not hashed (a dict); ``full_version`` carries its digest, so equal versions mean equal parameters.
    params: Mapping[str, Any] | None = field(default=None, hash=False)
    # Where a ``fetched`` prompt's text came from (a registry reference), for reports; not versioned.
    source: str | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.version:
            # ``replaytest.history.digest.sha256_text``, spelled out: workflow code imports this module
            # (in Temporal's sandbox, once per run), so it stays free of the history package.
            object.__setattr__(self, "version", "sha256:" + hashlib.sha256(self.template.encode("utf-8")).hexdigest())
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip() or " " in self.model):
            raise ValueError(f"Prompt {self.name!r}: model must be a model name without spaces, not {self.model!r}")
        if self.params is not None:
            if not isinstance(self.params, Mapping):
                raise TypeError(f"Prompt {self.name!r}: params must be a mapping of parameter names to JSON values")
            # A private copy: a caller changing its dict later must not change a recorded version.
            object.__setattr__(self, "params", json.loads(_params_json(self.name, self.params)))

    @classmethod
    def fetched(
        cls,
        name: str,
        text: str,
        *,
        version: str = "",
        model: str | None = None,
        params: Mapping[str, Any] | None = None,
        source: str | None = None,
    ) -> Prompt:
        """A prompt whose text comes from a registry or is built at run time (LangSmith's hub, a
        database, a feature flag). Make it where the model call renders it, inside the step, task or
        activity: it is not in the run's start manifest, so its version is known only from the call
        that records it (``use_prompt`` or ``render`` on engines that record per call). ``source``
        names where the text came from (``"hub:acme/reply:3f2a"``) for reports."""
        return cls(name, text, version=version, model=model, params=params, source=source)

    @property
    def full_version(self) -> str:
        """What is recorded and compared: ``version``, plus the model and a digest of the parameters
        when the prompt declares them (see the module docstring)."""
        return compose_version(self.version, self.model, self.params)

    def with_model(self, model: str | None, **params: Any) -> Prompt:
        """This prompt with another model and parameters (``P.with_model("gpt-4.1", temperature=0)``)."""
        return replace(self, model=model, params=params or None)

    def render(self, **values: Any) -> str:
        """The template with ``{placeholders}`` filled (``str.format`` syntax). Engines that record
        prompt versions per call (see each engine's ``prompts`` module) record this prompt's version
        for the step or task rendering it."""
        for hook in tuple(_RENDER_HOOKS):
            hook(self)
        return self.template.format(**values)

    @property
    def ref(self) -> PromptRef:
        from replaytest.history.model import PromptRef

        return PromptRef(name=self.name, version=self.full_version, params=self.params)

    def record(self) -> dict[str, Any]:
        """The JSON an engine stores for a call that used this prompt: name, full version, and the
        model and parameters when declared (so a report can say "temperature 0.2 → 0.9")."""
        out: dict[str, Any] = {"name": self.name, "version": self.full_version}
        if self.model is not None:
            out["model"] = self.model
        if self.params:
            out["params"] = dict(self.params)
        if self.source is not None:
            out["source"] = self.source
        return out


# Called with every ``Prompt`` rendered; engines that record per call register one (their ``prompts``
# module) and record only when the rendering code runs inside one of their steps or tasks.
_RENDER_HOOKS: list[Callable[[Prompt], None]] = []


def add_render_hook(hook: Callable[[Prompt], None]) -> None:
    """Register ``hook`` to be called with each ``Prompt`` rendered (once per hook)."""
    if hook not in _RENDER_HOOKS:
        _RENDER_HOOKS.append(hook)


def _params_json(name: str, params: Mapping[str, Any]) -> str:
    try:
        return json.dumps(dict(params), sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"Prompt {name!r}: params must be JSON values (numbers, strings, lists, maps): {error}") from None


def compose_version(version: str, model: str | None, params: Mapping[str, Any] | None) -> str:
    """A full version: ``version`` alone, or with `` model=…`` and `` params=<16 hex>`` appended."""
    full = version
    if model is not None:
        full += f" model={model}"
    if params:
        digest = hashlib.sha256(_params_json("", params).encode("utf-8")).hexdigest()[:16]
        full += f" params={digest}"
    return full


_FULL_VERSION = re.compile(r"^(?P<text>.*?)(?: model=(?P<model>\S+))?(?: params=(?P<params>[0-9a-f]{16}))?$", re.DOTALL)


def split_version(full: str) -> tuple[str, str | None, str | None]:
    """``(text version, model, parameter digest)`` of a full version (see ``compose_version``)."""
    match = _FULL_VERSION.match(full)
    assert match is not None  # the pattern matches every string
    return match["text"], match["model"], match["params"]


def _short_text(version: str) -> str:
    return version[:19] if version.startswith("sha256:") else version


def describe_version_change(
    old: str | None,
    new: str | None,
    old_params: Mapping[str, Any] | None = None,
    new_params: Mapping[str, Any] | None = None,
) -> str:
    """What changed from ``old`` to ``new`` (full versions), in words: ``text v1 → v2``, ``model
    gpt-4o-mini → gpt-4.1``, ``temperature 0.2 → 0.9`` (when both calls' parameters are known; when only
    the new ones are — a start manifest keeps only a digest — ``parameters now temperature 0.9; the run
    recorded only their digest …``; else the two digests), joined with ``; ``."""
    if old is None or new is None:
        return f"{short_version(old)} → {short_version(new)}"
    old_text, old_model, old_digest = split_version(old)
    new_text, new_model, new_digest = split_version(new)
    parts = []
    if old_text != new_text:
        parts.append(f"text {_short_text(old_text)} → {_short_text(new_text)}")
    if old_model != new_model:
        parts.append(f"model {old_model or 'not declared'} → {new_model or 'not declared'}")
    if old_digest != new_digest:
        if old_params is not None and new_params is not None:
            changed = [
                f"{key} {json.dumps(old_params.get(key)) if key in old_params else 'unset'} → "
                f"{json.dumps(new_params.get(key)) if key in new_params else 'unset'}"
                for key in sorted(set(old_params) | set(new_params))
                if old_params.get(key, _UNSET) != new_params.get(key, _UNSET)
            ]
            parts.extend(changed or ["parameters changed"])
        elif old_digest is None:
            parts.append("parameters declared")
        elif new_digest is None:
            parts.append("parameters no longer declared")
        elif new_params is not None:
            # The old side is a manifest (or a record) that keeps only the digest: say what the code has now.
            now = ", ".join(f"{key} {json.dumps(value)}" for key, value in sorted(new_params.items()))
            parts.append(f"parameters now {now}; the run recorded only their digest {old_digest[:8]}")
        else:
            parts.append(f"parameters digest {old_digest[:8]} → {new_digest[:8]} (their values were not recorded)")
    return "; ".join(parts) or f"{short_version(old)} → {short_version(new)}"


_UNSET = object()


def model_or_params_changed(old: str | None, new: str | None) -> bool:
    """True when two full versions differ in the model or the parameters (not only in the text)."""
    if old is None or new is None:
        return False
    return split_version(old)[1:] != split_version(new)[1:]


def short_version(version: str | None) -> str:
    """A version as reports print it: explicit versions whole, content hashes cut to 12 hex digits, the
    model (when declared) in brackets: ``sha256:3f2a9c1b0d4e (gpt-4o-mini, params 3f2a9c1b)``."""
    if version is None:
        return "none"
    text, model, digest = split_version(version)
    extras = [part for part in (model, f"params {digest[:8]}" if digest else None) if part]
    return _short_text(text) + (f" ({', '.join(extras)})" if extras else "")


def uses_prompts(*prompts: Prompt) -> Callable[[T], T]:
    """Declare prompts a workflow uses in addition to those its code references (decorator)."""

    def mark(obj: T) -> T:
        earlier = tuple(getattr(obj, DECLARED, ()))
        setattr(obj, DECLARED, earlier + prompts)
        try:
            _CACHE.pop(obj, None)
        except TypeError:  # not weakly referenceable: never cached
            pass
        return obj

    return mark


# A ContextVar, so that concurrent coroutines of one workflow each have their own prompts in use.
_IN_USE: contextvars.ContextVar[tuple[tuple[str, str], ...]] = contextvars.ContextVar("replaytest_prompts_in_use", default=())
# The ``Prompt`` objects of those blocks (same order), for recorders that store the model and parameters.
_IN_USE_OBJECTS: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar("replaytest_prompt_objects", default=())
# Called with each ``Prompt`` a ``use_prompt`` block is entered with (inside the block); engines that
# record per call register one (LangGraph: ``replaytest.plugins.langgraph.recording``).
_USE_HOOKS: list[Callable[[Prompt], None]] = []


def add_use_hook(hook: Callable[[Prompt], None]) -> None:
    """Register ``hook`` to be called with the prompt of each ``use_prompt`` block entered (once per hook)."""
    if hook not in _USE_HOOKS:
        _USE_HOOKS.append(hook)


@contextlib.contextmanager
def use_prompt(prompt: Prompt) -> Iterator[Prompt]:
    """In workflow code: the step, task or model calls made in this block use ``prompt`` (nestable)."""
    token = _IN_USE.set((*_IN_USE.get(), (str(prompt.name), _full_version(prompt))))
    objects = _IN_USE_OBJECTS.set((*_IN_USE_OBJECTS.get(), prompt))
    try:
        for hook in tuple(_USE_HOOKS):
            hook(prompt)
        yield prompt
    finally:
        _IN_USE_OBJECTS.reset(objects)
        _IN_USE.reset(token)


def prompt_objects_in_use() -> tuple[Prompt, ...]:
    """The ``Prompt`` of every ``use_prompt`` block around the running code, outermost first."""
    return _IN_USE_OBJECTS.get()


def prompts_in_use() -> tuple[tuple[str, str], ...]:
    """``(name, version)`` of every ``use_prompt`` block around the running code, outermost first."""
    return _IN_USE.get()


def fetched_prompt_site(fn: Any, *, depth: int = 2) -> tuple[str, int] | None:
    """``(file, line)`` where ``fn`` — or a helper function of the application it calls, ``depth`` levels
    down — calls ``Prompt.fetched``, else None. Read from the bytecode (no source needed): a load of the
    ``Prompt`` class (a global, a closure variable or a module attribute) followed by ``.fetched``. A prompt
    fetched at run time is in no manifest: replay can say that a step it has not run yet will use one, not
    which text the registry will hold then."""
    seen: set[int] = set()

    def scan(function: types.FunctionType, depth: int) -> tuple[str, int] | None:
        if id(function.__code__) in seen:
            return None
        seen.add(id(function.__code__))
        namespace: dict[str, Any] = dict(function.__globals__)
        for variable, cell in zip(function.__code__.co_freevars, function.__closure__ or ()):
            try:
                namespace[variable] = cell.cell_contents
            except ValueError:  # an empty cell
                continue
        helpers: list[types.FunctionType] = []
        for code in _code_objects(function.__code__):
            loaded: Any = None
            line = code.co_firstlineno
            for instruction in dis.get_instructions(code):
                positions = getattr(instruction, "positions", None)
                if positions is not None and positions.lineno is not None:
                    line = positions.lineno
                elif isinstance(instruction.starts_line, int) and not isinstance(instruction.starts_line, bool):
                    line = instruction.starts_line  # Python 3.10
                if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"):
                    loaded = namespace.get(str(instruction.argval))
                elif instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                    if instruction.argval == "fetched" and isinstance(loaded, type) and issubclass(loaded, Prompt):
                        return code.co_filename, line
                    loaded = getattr(loaded, str(instruction.argval), None) if isinstance(loaded, types.ModuleType) else None
                else:
                    if isinstance(loaded, types.FunctionType) and _is_application_module(loaded.__module__):
                        helpers.append(loaded)
                    loaded = None
        for helper in helpers if depth > 0 else ():
            found = scan(helper, depth - 1)
            if found is not None:
                return found
        return None

    fn = getattr(fn, "__wrapped__", fn)
    return scan(fn, depth) if isinstance(fn, types.FunctionType) else None


def _code_objects(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code objects nested in it (inner functions, comprehensions, lambdas)."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _code_objects(constant)


# A note for an unfinished run whose next step, task or node fetches its prompt at run time.
FETCHED_AHEAD_NOTE = (
    "{what} renders a prompt fetched at run time (Prompt.fetched at {where}): the {status} run will use whatever "
    "the registry holds when it resumes, which replay cannot compare offline; its version is recorded when it runs"
)


# Temporal writes a call's version into the scheduled activity's headers, from workflow code: a prompt the
# activity fetches inside its body is rendered after that, where nothing records it.
FETCHED_IN_ACTIVITY = (
    "Temporal records a version only through use_prompt around the activity in workflow code, so this one "
    "will not be recorded"
)


def fetched_ahead_note(what: str, site: tuple[str, int], status: str, *, recorded: str | None = None) -> str:
    """``FETCHED_AHEAD_NOTE`` for ``what`` (the step in the engine's words), its site and the run's status;
    ``recorded`` replaces its last clause where the engine records no version for that call
    (``FETCHED_IN_ACTIVITY``)."""
    where = f"{site[0].replace(chr(92), '/').rsplit('/', 1)[-1]}:{site[1]}"
    note = FETCHED_AHEAD_NOTE.format(what=what, where=where, status=status)
    if recorded is not None:
        note = note.replace("its version is recorded when it runs", recorded)
    return note


class PromptManifest(dict[str, str]):
    """A prompt manifest (``{name: version}``) that also knows where the code uses each prompt:
    ``sites[name]`` is ``(file, line, function)`` of the first line found loading it, so a report about a
    prompt a run has not reached yet can name the line. A plain ``dict`` everywhere else."""

    sites: dict[str, tuple[str, int, str]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sites = {}


# Weak keys: Temporal's sandbox makes a fresh class per run, which must not be kept alive by the cache.
_CACHE: weakref.WeakKeyDictionary[Any, PromptManifest] = weakref.WeakKeyDictionary()


def prompt_manifest(*roots: Any) -> PromptManifest:
    """``{name: version}`` of every ``Prompt`` reachable from ``roots`` (workflow functions or classes),
    with the line using each (``PromptManifest.sites``).

    Two different prompts with one name keep the first found; walking order is deterministic."""
    manifest = PromptManifest()
    for root in roots:
        try:
            found = _CACHE.get(root)
        except TypeError:  # not weakly referenceable (a list, say): walked every time
            found = None
        if found is None:
            found = PromptManifest()
            _Walk(found).visit(root)
            try:
                _CACHE[root] = found
            except TypeError:
                pass
        for name, version in found.items():
            if name not in manifest:
                manifest[name] = version
                if name in found.sites:
                    manifest.sites[name] = found.sites[name]
    return manifest


_OBJECTS_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def prompt_objects(*roots: Any) -> dict[str, Prompt]:
    """``{name: Prompt}`` of the ``Prompt`` objects ``prompt_manifest(*roots)`` finds (the first of a
    name, as there), for a report that needs a prompt's model and parameters, not only its version."""
    objects: dict[str, Prompt] = {}
    for root in roots:
        try:
            found = _OBJECTS_CACHE.get(root)
        except TypeError:
            found = None
        if found is None:
            found = {}
            _Walk(PromptManifest(), found).visit(root)
            try:
                _OBJECTS_CACHE[root] = found
            except TypeError:
                pass
        for name, prompt in found.items():
            objects.setdefault(name, prompt)
    return objects


def _loading_line(code: types.CodeType, name: str) -> int:
    """The line of the first instruction of ``code`` loading ``name`` (a global, or an attribute such as
    ``prompts.REPLY``); the function's first line when none is found."""
    import dis

    for instruction in dis.get_instructions(code):
        if instruction.opname in _LOADS and instruction.argval == name:
            positions = getattr(instruction, "positions", None)
            line = positions.lineno if positions is not None else None
            if line is None:
                line = instruction.starts_line if isinstance(instruction.starts_line, int) else None
            if line:
                return int(line)
    return code.co_firstlineno


_LOADS = frozenset(("LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD", "LOAD_DEREF", "LOAD_FROM_DICT_OR_GLOBALS"))


def _is_application_module(name: str | None) -> bool:
    if not name:
        return False
    top = name.partition(".")[0]
    if top in _SKIPPED_TOP or top in sys.stdlib_module_names:
        return False
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None) or ""
    return "site-packages" not in path and "dist-packages" not in path


class _Walk:
    def __init__(self, found: PromptManifest, objects: dict[str, Any] | None = None) -> None:
        self.found = found
        self.objects = objects  # {name: the Prompt object}, when asked for (``prompt_objects``)
        self.seen: set[int] = set()
        # The code object whose name is being followed, and that name: where a prompt found is used.
        self._using: tuple[types.CodeType, str] | None = None

    def visit(self, obj: Any) -> None:
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        prompt_type = _prompt_fields(obj)
        if prompt_type is not None:
            name, version = prompt_type
            if name not in self.found:
                self.found[name] = version
                if self.objects is not None:
                    self.objects[name] = obj
                if self._using is not None:
                    code, loaded = self._using
                    self.found.sites[name] = (code.co_filename, _loading_line(code, loaded), code.co_qualname
                                              if hasattr(code, "co_qualname") else code.co_name)
            return
        for declared in getattr(obj, DECLARED, ()) if not isinstance(obj, types.ModuleType) else ():
            outer, self._using = self._using, None  # declared, not loaded by a line of code
            self.visit(declared)
            self._using = outer
        if isinstance(obj, (staticmethod, classmethod, types.MethodType)):
            self.visit(obj.__func__)
        elif isinstance(obj, functools.partial):
            self.visit(obj.func)
            self._items(obj.args)
            self._items(obj.keywords.values())
        elif isinstance(obj, property):
            for accessor in (obj.fget, obj.fset, obj.fdel):
                if accessor is not None:
                    self.visit(accessor)
        elif isinstance(obj, types.FunctionType):
            self._function(obj)
        elif isinstance(obj, type):
            # The class and its application base classes: methods a workflow inherits run too.
            for cls in obj.__mro__:
                if _is_application_module(cls.__module__):
                    for value in list(vars(cls).values()):
                        self.visit(value)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            self._items(obj)
        elif isinstance(obj, Mapping) and not isinstance(obj, types.MappingProxyType):
            self._items(obj.values())
        else:
            self._wrapper(obj)

    def _wrapper(self, obj: Any) -> None:
        """An object wrapping a function of the application (LangGraph's ``@task``, a decorator's class
        instance): the function it keeps in ``func`` or ``__wrapped__`` runs when the object is called.
        Read from the instance's own ``__dict__``: no attribute lookup that could run code."""
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            return
        for key in ("func", "__wrapped__"):
            wrapped = attributes.get(key)
            if isinstance(wrapped, (types.FunctionType, functools.partial)):
                self.visit(wrapped)

    def _items(self, items: Iterable[Any]) -> None:
        for index, item in enumerate(items):
            if index >= _MAX_CONTAINER:
                break
            self.visit(item)

    def _function(self, fn: types.FunctionType) -> None:
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:
            self.visit(wrapped)
        if not _is_application_module(fn.__module__):
            return
        outer = self._using
        for variable, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            self._using = (fn.__code__, variable)
            try:
                self.visit(cell.cell_contents)
            except ValueError:  # an empty cell (a name assigned later)
                pass
        self._using = (fn.__code__, "")  # a default value: the function's first line
        self._items(fn.__defaults__ or ())
        self._items((fn.__kwdefaults__ or {}).values())
        self._using = outer
        self._code(fn.__code__, fn.__globals__)

    def _code(self, code: types.CodeType, namespace: Mapping[str, Any]) -> None:
        names = code.co_names
        outer = self._using
        for name in names:
            if name not in namespace:
                continue
            value = namespace[name]
            self._using = (code, name)
            if isinstance(value, types.ModuleType):
                self._module(value, names, code=code)
                continue
            self.visit(value)
        self._using = outer
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const, namespace)

    def _module(
        self, module: types.ModuleType, names: tuple[str, ...], depth: int = 0, code: types.CodeType | None = None
    ) -> None:
        """``prompts.WRITER``, ``app.prompts.WRITER``: the attribute names the code loads are among its
        ``co_names`` too, so the module's members of those names are followed (submodules likewise)."""
        # Not marked as seen: another function may load other names of the same module.
        if depth > 8 or not _is_application_module(module.__name__):
            return
        for attribute in names:
            member = module.__dict__.get(attribute)
            if code is not None:
                self._using = (code, attribute)
            if isinstance(member, types.ModuleType):
                self._module(member, names, depth + 1, code)
            elif member is not None:
                self.visit(member)


def _prompt_fields(obj: Any) -> tuple[str, str] | None:
    """``(name, version)`` if ``obj`` is a ``Prompt`` — also one made by another copy of this module
    (Temporal's workflow sandbox imports a workflow's modules afresh), recognised by its type's name."""
    if isinstance(obj, Prompt):
        return obj.name, obj.full_version
    kind = type(obj)
    if kind.__name__ == "Prompt" and kind.__module__ == __name__ and not isinstance(obj, type):
        return str(obj.name), _full_version(obj)
    return None


def _full_version(prompt: Any) -> str:
    """The full version of a ``Prompt`` of this module or of another copy of it (Temporal's sandbox)."""
    full = getattr(prompt, "full_version", None)
    return str(full if full is not None else prompt.version)


def renamed_prompts(recorded: Mapping[str, str], current: Mapping[str, str]) -> dict[str, str]:
    """``{new name: old name}`` for each prompt the current code has under a name the run's manifest
    lacks, at a version the manifest holds under a name the current code lacks: the same prompt renamed,
    which changes nothing a run does."""
    gone = {version: name for name, version in sorted(recorded.items()) if name not in current}
    return {name: gone[version] for name, version in sorted(current.items()) if name not in recorded and version in gone}


def also_changed(
    name: str, old: str, new: str, old_params: Mapping[str, Any] | None = None, new_params: Mapping[str, Any] | None = None
) -> str:
    """Another changed prompt of one recorded call, as a drift message names it after the compared one
    (``Issued.prompt_also``): ``also prompt tone: now …, recorded … (temperature 0.2 → 0.9)``."""
    change = f" ({describe_version_change(old, new, old_params, new_params)})" if model_or_params_changed(old, new) else ""
    return f"also prompt {name}: now {short_version(new)}, recorded {short_version(old)}{change}"


def describe_changes(
    recorded: Mapping[str, str],
    current: Mapping[str, str],
    skip: Iterable[str] = (),
    *,
    params: Mapping[str, tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]] | None = None,
    used: Iterable[str] = (),
) -> list[str]:
    """One phrase per prompt whose current version differs from the manifest a run started under
    (``skip``: names already compared at a recorded model call). A renamed prompt (``renamed_prompts``)
    is no change. ``params``: ``{name: (old parameters, new parameters)}`` where known, so a change says
    ``temperature 0.2 → 0.9``; ``used``: names whose ``recorded`` version is the one a recorded call of the
    run used (the run will use them again), said so."""
    params = params or {}
    used = set(used)
    skipped = set(skip) | set(renamed_prompts(recorded, current))
    phrases = []
    for name in sorted(set(recorded) | set(current)):
        if name in skipped:
            continue
        old, new = recorded.get(name), current.get(name)
        if old == new or new is None:
            continue  # unchanged, or no longer used by the current code: nothing will run it
        if old is None:
            phrases.append(f"will use {name} {short_version(new)}, which did not exist when it started")
        else:
            change = f" ({describe_version_change(old, new, *params.get(name, (None, None)))})" if model_or_params_changed(old, new) else ""
            if name in used:
                phrases.append(f"will use {name} {short_version(new)} again, used under {short_version(old)} by a recorded step{change}")
            else:
                phrases.append(f"will use {name} {short_version(new)}, started under {short_version(old)}{change}")
    return phrases

