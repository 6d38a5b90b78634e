"""``chat_desk.py`` with ``confirm`` asking about the last message's text in capitals."""

from __future__ import annotations

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt

from graph_apps.effects import effect


def answer(state: MessagesState) -> dict:
    effect("answer")
    return {"messages": [AIMessage(content=f"you asked: {state['messages'][-1].content}")]}


def confirm(state: MessagesState) -> dict:
    reply = interrupt({"send": state["messages"][-1].content.upper()})
    effect(f"confirm {reply}")
    return {}


builder = StateGraph(MessagesState)
builder.add_node("answer", answer)
builder.add_node("confirm", confirm)
builder.add_edge(START, "answer")
builder.add_edge("answer", "confirm")
builder.add_edge("confirm", END)
graph = builder.compile()
