"""Framework plugin for AWS Lambda durable functions (``aws-durable-execution-sdk-python``).

``PLUGIN`` wires the parts, each in a module of its own: ``profile`` (the lint profile), ``importer``
(``replaytest import aws-durable``: saved ``get-durable-execution`` and ``get-durable-execution-history``
JSON into neutral histories), ``values`` (the SDK's typed payload envelope as JSON data), ``replayer``
(replay through the SDK's own ``durable_execution`` wrapper, loaded on first replay), ``rehearsal`` (a
parked execution resumed past its wait or callback by that wrapper, for ``impact``), ``double_run`` (the
double run's tracer: the handler invoked through the same path with every operation stubbed) and ``internals``
(the only module that touches the SDK beyond its documented API).
"""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.aws_durable.profile import PROFILE

PLUGIN = FrameworkPlugin(
    name="aws_durable",
    profile=PROFILE,
    replayer=LazyReplayer("aws_durable", "replaytest.plugins.aws_durable.replayer:AwsDurableReplayer"),
    import_command="replaytest.plugins.aws_durable.importer:import_command",
    double_run_tracer="replaytest.plugins.aws_durable.double_run:trace_aws_durable",
)
