"""The ticket workflow: the customer's account (unknown customers are sent to sign up), triage by
subject, a queue chosen by the customer's e-mail domain, and an escalation whose class lives in a module
the workflow module never imports."""

from __future__ import annotations

from dbos import DBOS

from helpdesk.models import Triage

ENTERPRISE_DOMAIN = "@acme.com"
ACCOUNTS = {"dana.whitfield@acme.com": "enterprise"}


class AccountNotFound(Exception):
    """No account is registered for the ticket's e-mail address."""


@DBOS.step()
def load_account(email: str) -> str:
    if email not in ACCOUNTS:
        raise AccountNotFound(f"no account for {email}")
    return ACCOUNTS[email]


@DBOS.step()
def triage(subject: str) -> Triage:
    queue = "billing" if "invoice" in subject.lower() else "general"
    return Triage(queue, 1 if "urgent" in subject.lower() else 3)


@DBOS.step()
def escalate(ticket_id: str, queue: str) -> object:
    from helpdesk.legacy_routing import Escalation  # only this step needs the old rules

    return Escalation(team=f"{queue}-tier2", reason=f"{ticket_id} waited more than two days")


@DBOS.workflow()
def handle_ticket(ticket_id: str, subject: str, customer_email: str) -> dict:
    try:
        load_account(customer_email)
    except AccountNotFound as missing:
        return {"ticket": ticket_id, "queue": "signup", "note": str(missing)}
    decision = triage(subject)
    queue = f"enterprise-{decision.queue}" if customer_email.endswith(ENTERPRISE_DOMAIN) else decision.queue
    escalation = escalate(ticket_id, queue) if decision.priority == 1 else None
    return {"ticket": ticket_id, "queue": queue, "priority": decision.priority, "escalation": escalation}
