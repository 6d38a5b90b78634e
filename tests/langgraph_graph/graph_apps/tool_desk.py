"""An agent loop of the prebuilt kind: ``agent`` (a stand-in for a chat model: it asks for the order, then
for the refund, then answers) and ``tools`` (``ToolNode``), routed by ``tools_condition``. The
``issue_refund`` tool asks a person to approve (``interrupt`` inside the tool). ``approving`` is the same
graph compiled with ``interrupt_before=["tools"]`` (a person approves each batch of tool calls). Tool
bodies append to the effects log: a tool is an effect."""

from __future__ import annotations

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt

from graph_apps.effects import effect

QUESTION = "refund this order?"


@tool
def lookup_order(order_id: str) -> str:
    """Look an order up."""
    effect(f"lookup_order {order_id}")
    return f"order {order_id}: a lamp, 40.00"


@tool
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an order, once a person approved it."""
    effect(f"issue_refund asked {order_id}")
    answer = interrupt({"question": QUESTION, "order_id": order_id, "amount": amount})
    effect(f"issue_refund {order_id} {answer}")
    return f"refunded {amount:.2f}" if answer == "approve" else "refund declined"


TOOLS = [lookup_order, issue_refund]


def call(name: str, args: dict, number: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{number}", "type": "tool_call"}])


def agent(state: MessagesState) -> dict:
    effect("agent")
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    if not results:
        return {"messages": [call("lookup_order", {"order_id": "A-17"}, 1)]}
    if len(results) == 1:
        return {"messages": [call("issue_refund", {"order_id": "A-17", "amount": 40.0}, 2)]}
    return {"messages": [AIMessage(content=f"done: {results[-1].content}")]}


def build(tools: list) -> StateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder


graph = build(TOOLS).compile()
approving = build(TOOLS).compile(interrupt_before=["tools"])
