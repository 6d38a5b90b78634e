"""A small LangGraph functional-API order agent and edited versions of it, for the LangGraph tests."""
