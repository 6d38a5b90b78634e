"""Replay: re-run current orchestration code against recorded histories and report the first divergence."""
