"""A support desk Durable Functions app whose runs hold what redaction rewrites (an e-mail, an API key) and
random ids (the orchestration's deterministic ``context.new_uuid()``, a ``uuid4`` token from an activity)
that a later activity takes as its input; a ticket that needs approval waits for an external event."""

import uuid

import azure.durable_functions as df

app = df.DFApp()


@app.orchestration_trigger(context_name="context")
def redaction_desk(context: df.DurableOrchestrationContext):
    ticket = context.get_input()
    reference = str(context.new_uuid())
    token = yield context.call_activity("new_token", ticket["customer"])
    profile = yield context.call_activity("load_profile", ticket["customer"])
    case = yield context.call_activity("open_case", {"reference": reference, "token": token, "email": profile["email"]})
    if ticket.get("needs_approval"):
        yield context.wait_for_external_event("approval")
    closed = yield context.call_activity("close_case", {"case": case["case"], "token": token})
    return {"reference": reference, "case": case["case"], "closed": closed, "contact": profile["email"]}


@app.activity_trigger(input_name="customer")
def new_token(customer: str) -> str:
    return uuid.uuid4().hex


@app.activity_trigger(input_name="customer")
def load_profile(customer: str) -> dict:
    return {"email": f"{customer}@example.com", "api_key": "sk-live-0123456789abcdefXYZ", "tier": "gold"}


@app.activity_trigger(input_name="request")
def open_case(request: dict) -> dict:
    return {"case": "C-" + request["reference"][:8], "contact": request["email"], "token": request["token"]}


@app.activity_trigger(input_name="request")
def close_case(request: dict) -> str:
    return f"closed {request['case']} with {request['token'][:4]}"
