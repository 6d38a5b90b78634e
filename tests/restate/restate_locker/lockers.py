"""A left-luggage desk on Restate, for the journal entries the order desk does not write: a virtual object
``locker`` that lists its state keys, clears one key and then all of them, calls the ``porter`` service
through ``ctx.generic_call`` and sends to another locker with ``ctx.object_send``; and a porter who hands a
key over: resolves another invocation's awakeable (``ctx.resolve_awakeable``), sends by name
(``ctx.generic_send``) and cancels a napping invocation (``ctx.cancel_invocation``), or turns a waiter
away (``ctx.reject_awakeable``) and books a delivery (``ctx.workflow_send``); a ``parcel`` workflow whose
delivery waits for a signature promise that a shared handler peeks at and resolves, or another rejects; and
a porter who asks a workflow for its status (``ctx.workflow_call``) and waits for a delivery's output
(``ctx.attach_invocation``). Served as ``app``."""

from __future__ import annotations

import json
from datetime import timedelta

import restate

porter = restate.Service("porter", inactivity_timeout=timedelta(seconds=1))
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


@porter.handler()
async def wait_for_key(ctx: restate.Context, who: str) -> str:
    awakeable_id, key = ctx.awakeable(type_hint=str)
    await ctx.run_typed("publish", lambda: awakeable_id)
    return f"{who} got {await key}"


@porter.handler()
async def nap(ctx: restate.Context, minutes: int) -> str:
    await ctx.sleep(timedelta(minutes=minutes))
    return "rested"


@porter.handler()
async def hand_over(ctx: restate.Context, request: dict) -> str:
    ctx.resolve_awakeable(request["awakeable"], "brass key")
    ctx.generic_send("porter", "carry", arg=json.dumps("the key box").encode("utf-8"))
    ctx.cancel_invocation(request["napping"])
    return "handed over"


@porter.handler()
async def turn_away(ctx: restate.Context, request: dict) -> str:
    ctx.reject_awakeable(request["awakeable"], "no key for you")
    ctx.workflow_send(deliver, key=request["parcel"], arg="the attic")
    return "turned away"


parcel = restate.Workflow("parcel", inactivity_timeout=timedelta(seconds=1))


@parcel.main()
async def deliver(ctx: restate.WorkflowContext, address: str) -> str:
    signature = await ctx.promise("signature", type_hint=str).value()
    return f"delivered to {address}, signed by {signature}"


@parcel.handler()
async def sign(ctx: restate.WorkflowSharedContext, name: str) -> str:
    before = await ctx.promise("signature", type_hint=str).peek()
    await ctx.promise("signature", type_hint=str).resolve(name)
    return f"signed by {name} (before: {before})"


@parcel.handler()
async def refuse(ctx: restate.WorkflowSharedContext, reason: str) -> str:
    await ctx.promise("signature", type_hint=str).reject(reason)
    return f"refused: {reason}"


@parcel.handler()
async def status(ctx: restate.WorkflowSharedContext) -> str:
    signature = await ctx.promise("signature", type_hint=str).peek()
    return "waiting" if signature is None else f"signed by {signature}"


@porter.handler()
async def check_parcel(ctx: restate.Context, request: dict) -> dict:
    status_now = await ctx.workflow_call(status, key=request["parcel"], arg=None)
    delivered = await ctx.attach_invocation(request["delivery"], type_hint=str)
    return {"status": status_now, "delivered": delivered}


app = restate.app(services=[porter, locker, parcel])
