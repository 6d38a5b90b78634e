"""pytest plugin: collects recorded histories as test items and replays them against the current code."""
