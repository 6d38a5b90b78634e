"""A left-luggage desk on Restate, for the journal entries the order desk does not write: a virtual object
``locker`` that lists its state keys, clears one key and then all of them, calls the ``porter`` service
through ``ctx.generic_call`` and sends to another locker with ``ctx.object_send``. Served as ``app``."""

from __future__ import annotations

import json

import restate

porter = restate.Service("porter")
locker = restate.VirtualObject("locker")


@porter.handler()
async def carry(ctx: restate.Context, item: str) -> str:
    return f"carried {item}"


@locker.handler()
async def store(ctx: restate.ObjectContext, item: str) -> int:
    ctx.set("contents", [item])
    ctx.set("owner", ctx.key())
    return 1


@locker.handler()
async def empty(ctx: restate.ObjectContext, note: str) -> dict:
    keys = await ctx.state_keys()
    contents = await ctx.get("contents", type_hint=list) or []
    ctx.clear("contents")
    ctx.clear_all()
    carried = await ctx.generic_call("porter", "carry", arg=json.dumps(note).encode("utf-8"))
    ctx.object_send(store, key="spare", arg=note)
    return {"keys": sorted(keys), "contents": contents, "carried": json.loads(carried)}


app = restate.app(services=[porter, locker])
