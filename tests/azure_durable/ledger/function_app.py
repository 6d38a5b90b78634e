"""A ledger on Durable Functions entities: an ``account`` entity keeps a balance (``deposit``, ``withdraw``,
``balance``); the ``settle_invoice`` orchestrator credits an account (``call_entity``), signals the audit
account (``signal_entity``), writes a receipt (an activity) and tries an overdraft the entity refuses. Entity
and activity bodies append a line to the file named by ``LEDGER_MARKER`` when it is set, so a test can
tell whether any of them ran."""

import os

import azure.durable_functions as df

app = df.DFApp()
MARKER: dict[str, str | None] = {"path": os.environ.get("LEDGER_MARKER")}


def _ran(what: str) -> None:
    path = MARKER["path"]
    if path:
        with open(path, "a", encoding="utf-8") as marker:
            marker.write(what + "\n")


@app.entity_trigger(context_name="context")
def account(context: df.DurableEntityContext):
    _ran(f"account {context.operation_name}")
    balance = context.get_state(lambda: 0)
    operation = context.operation_name
    if operation == "deposit":
        balance += context.get_input()
    elif operation == "withdraw":
        amount = context.get_input()
        if amount > balance:
            raise ValueError(f"insufficient funds: {balance} < {amount}")
        balance -= amount
    context.set_state(balance)
    context.set_result(balance)


@app.orchestration_trigger(context_name="context")
def settle_invoice(context: df.DurableOrchestrationContext):
    invoice = context.get_input()
    payer = df.EntityId("account", invoice["account"])
    balance = yield context.call_entity(payer, "deposit", invoice["amount"])
    context.signal_entity(df.EntityId("account", "audit"), "deposit", 1)
    receipt = yield context.call_activity("write_receipt", {"account": invoice["account"], "balance": balance})
    try:
        yield context.call_entity(payer, "withdraw", 1000)
        overdraft = "allowed"
    except Exception as refused:
        overdraft = f"refused: {refused}"
    return {"balance": balance, "receipt": receipt, "overdraft": overdraft}


@app.activity_trigger(input_name="entry")
def write_receipt(entry: dict) -> str:
    _ran("write_receipt")
    return f"receipt {entry['account']} {entry['balance']}"
