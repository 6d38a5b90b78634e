"""Deploy impact (``replaytest impact``): which in-flight runs a change breaks, grouped by where, the
version guard that keeps them (verified by replay before it is offered), and which patches may retire.

- ``model``: the report's types, shared by the parts below;
- ``grouping``: replay results into per-workflow groups (one per divergence point) and not-reached runs;
- ``guards``: a version guard per change, from the code at the base revision and now; applying it;
- ``verify``: replaying histories against a temporary copy of the code with guards applied;
- ``project_copy``: that copy: what it holds (code, configuration, package data, the files the replay read),
  what it never holds (secrets files, version control, files over the size cap), its symlinks;
- ``termination``: SIGTERM during the verification handled as Ctrl-C, the child replays ended whole;
- ``retirement``: the patches already in the code and which runs still need their old branch;
- ``report``: text, markdown, github and json renderings.
"""
