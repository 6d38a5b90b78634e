"""Graph-API (StateGraph) agents written for the graph import and check tests."""
