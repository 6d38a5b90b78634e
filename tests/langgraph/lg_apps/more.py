"""Other shapes of functional-API code: a thread invoked several times (``previous``), nested tasks, a
failing task, and an ``async def`` entrypoint with a pickled result (for the refusal test)."""

from __future__ import annotations

from langgraph.func import entrypoint, task
from langgraph.types import interrupt

from lg_apps.tasks import _effect


@task
def add(total: int, amount: int) -> int:
    _effect(f"add {total} {amount}")
    return total + amount


@entrypoint()
def tally(amount: int, *, previous: int | None = None) -> int:
    return add(previous or 0, amount).result()


@task
def inner(x: int) -> int:
    _effect(f"inner {x}")
    return x * 2


@task
def outer(x: int) -> int:
    _effect(f"outer {x}")
    return inner(x).result() + 1


@entrypoint()
def nested_agent(x: int) -> int:
    return outer(x).result() + outer(x + 1).result()


@task
def boom(x: int) -> int:
    _effect(f"boom {x}")
    raise ValueError(f"cannot handle {x}")


@entrypoint()
def failing_agent(x: int) -> int:
    return add(x, 1).result() + boom(x).result()


@task
async def lookup(item: str) -> str:
    _effect(f"lookup {item}")
    return f"{item}-42"


@task
async def confirm(code: str) -> str:
    _effect(f"confirm {code}")
    return f"confirmed {code}"


@entrypoint()
async def async_agent(item: str) -> dict:
    code = await lookup(item)
    answer = interrupt({"code": code})
    done = await confirm(code)
    return {"code": code, "answer": answer, "done": done}


class Opaque:
    """Not msgpack-serialisable: a saver with pickle_fallback=True pickles it."""

    def __init__(self, label: str) -> None:
        self.label = label


@task
def opaque(label: str) -> Opaque:
    return Opaque(label)


@entrypoint()
def opaque_agent(label: str) -> str:
    return opaque(label).result().label


@task
def ask(question: str) -> str:
    _effect(f"ask {question}")
    return interrupt(question)


@entrypoint()
def asking_agent(topic: str) -> str:
    first = add(1, 2).result()
    return f"{topic} {first} {ask(topic).result()}"
