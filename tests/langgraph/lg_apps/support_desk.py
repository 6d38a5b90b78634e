"""A support router: enterprise customers (by e-mail domain) go to their account manager, everyone else
gets the FAQ answer. The branch reads the domain of the address in the input."""

from __future__ import annotations

from langgraph.func import entrypoint, task

from lg_apps.tasks import _effect

ENTERPRISE_DOMAIN = "@acme.com"


@task
def ask_account_manager(question: str, email: str) -> dict:
    _effect(f"ask_account_manager {email}")
    return {"handled_by": "account manager", "reply_to": email, "question": question}


@task
def answer_from_faq(question: str) -> dict:
    _effect(f"answer_from_faq {question}")
    return {"handled_by": "faq", "answer": f"see the FAQ entry on {question.split()[-1]}"}


@entrypoint()
def support_router(request: dict) -> dict:
    email = request["customer_email"]
    if email.endswith(ENTERPRISE_DOMAIN):
        route = ask_account_manager(request["question"], email).result()
    else:
        route = answer_from_faq(request["question"]).result()
    return {"route": route, "contact": email}
