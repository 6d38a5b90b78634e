"""``Prompt`` — a named, versioned prompt template any engine's code can use — and prompt manifests.

A ``Prompt``'s version is the SHA-256 of its template unless one is given (``version="v2"``). What a
model call used is recorded per engine (the journal's ``ctx.model(..., prompt=P)``, a header on a
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
import functools
import hashlib
import sys
import types
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from replaytest.history.model import PromptRef

DECLARED = "__replaytest_prompts__"  # attribute ``uses_prompts`` sets on a workflow
_SKIPPED_TOP = frozenset({"replaytest", "temporalio", "builtins"})
_MAX_CONTAINER = 256  # items looked at per list/tuple/dict/set global (prompt tables are small)
T = TypeVar("T")


@dataclass(frozen=True)
class Prompt:
    """A prompt template with a name and a version (by default ``sha256:`` of the template text)."""

    name: str
    template: str
    version: str = ""

    def __post_init__(self) -> None:
        if not self.version:
            # ``replaytest.history.digest.sha256_text``, spelled out: workflow code imports this module
            # (in Temporal's sandbox, once per run), so it stays free of the history package.
            object.__setattr__(self, "version", "sha256:" + hashlib.sha256(self.template.encode("utf-8")).hexdigest())

    def render(self, **values: Any) -> str:
        """The template with ``{placeholders}`` filled (``str.format`` syntax)."""
        return self.template.format(**values)

    @property
    def ref(self) -> PromptRef:
        from replaytest.history.model import PromptRef

        return PromptRef(name=self.name, version=self.version)


def short_version(version: str | None) -> str:
    """A version as reports print it: explicit versions whole, content hashes cut to 12 hex digits."""
    if version is None:
        return "none"
    return version[:19] if version.startswith("sha256:") else version


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


@contextlib.contextmanager
def use_prompt(prompt: Prompt) -> Iterator[Prompt]:
    """In workflow code: the step, task or model calls made in this block use ``prompt`` (nestable)."""
    token = _IN_USE.set((*_IN_USE.get(), (str(prompt.name), str(prompt.version))))
    try:
        yield prompt
    finally:
        _IN_USE.reset(token)


def prompts_in_use() -> tuple[tuple[str, str], ...]:
    """``(name, version)`` of every ``use_prompt`` block around the running code, outermost first."""
    return _IN_USE.get()


# Weak keys: Temporal's sandbox makes a fresh class per run, which must not be kept alive by the cache.
_CACHE: weakref.WeakKeyDictionary[Any, dict[str, str]] = weakref.WeakKeyDictionary()


def prompt_manifest(*roots: Any) -> dict[str, str]:
    """``{name: version}`` of every ``Prompt`` reachable from ``roots`` (workflow functions or classes).

    Two different prompts with one name keep the first found; walking order is deterministic."""
    manifest: dict[str, str] = {}
    for root in roots:
        try:
            found = _CACHE.get(root)
        except TypeError:  # not weakly referenceable (a list, say): walked every time
            found = None
        if found is None:
            found = {}
            _Walk(found).visit(root)
            try:
                _CACHE[root] = found
            except TypeError:
                pass
        for name, version in found.items():
            manifest.setdefault(name, version)
    return manifest


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
    def __init__(self, found: dict[str, str]) -> None:
        self.found = found
        self.seen: set[int] = set()

    def visit(self, obj: Any) -> None:
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        prompt_type = _prompt_fields(obj)
        if prompt_type is not None:
            self.found.setdefault(*prompt_type)
            return
        for declared in getattr(obj, DECLARED, ()) if not isinstance(obj, types.ModuleType) else ():
            self.visit(declared)
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
        for cell in fn.__closure__ or ():
            try:
                self.visit(cell.cell_contents)
            except ValueError:  # an empty cell (a name assigned later)
                pass
        self._items(fn.__defaults__ or ())
        self._items((fn.__kwdefaults__ or {}).values())
        self._code(fn.__code__, fn.__globals__)

    def _code(self, code: types.CodeType, namespace: Mapping[str, Any]) -> None:
        names = code.co_names
        for name in names:
            if name not in namespace:
                continue
            value = namespace[name]
            if isinstance(value, types.ModuleType):
                self._module(value, names)
                continue
            self.visit(value)
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self._code(const, namespace)

    def _module(self, module: types.ModuleType, names: tuple[str, ...], depth: int = 0) -> None:
        """``prompts.WRITER``, ``app.prompts.WRITER``: the attribute names the code loads are among its
        ``co_names`` too, so the module's members of those names are followed (submodules likewise)."""
        # Not marked as seen: another function may load other names of the same module.
        if depth > 8 or not _is_application_module(module.__name__):
            return
        for attribute in names:
            member = module.__dict__.get(attribute)
            if isinstance(member, types.ModuleType):
                self._module(member, names, depth + 1)
            elif member is not None:
                self.visit(member)


def _prompt_fields(obj: Any) -> tuple[str, str] | None:
    """``(name, version)`` if ``obj`` is a ``Prompt`` — also one made by another copy of this module
    (Temporal's workflow sandbox imports a workflow's modules afresh), recognised by its type's name."""
    if isinstance(obj, Prompt):
        return obj.name, obj.version
    kind = type(obj)
    if kind.__name__ == "Prompt" and kind.__module__ == __name__ and not isinstance(obj, type):
        return str(obj.name), str(obj.version)
    return None


def describe_changes(recorded: Mapping[str, str], current: Mapping[str, str], skip: Iterable[str] = ()) -> list[str]:
    """One phrase per prompt whose current version differs from the manifest a run started under
    (``skip``: names already compared at a recorded model call)."""
    skipped = set(skip)
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
            phrases.append(f"will use {name} {short_version(new)}, started under {short_version(old)}")
    return phrases

