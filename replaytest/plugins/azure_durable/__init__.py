"""Framework plugin for Azure Durable Functions (Python): generator orchestrators, activities, entities.

``PLUGIN`` wires the parts, each in a module of its own: ``profile`` (the lint profile), ``importer``
(``replaytest import azure-durable``: the task hub's History/Instances tables or the HTTP API's output into
neutral histories), ``dtfx_history`` (Durable Task histories in neutral terms and back), ``replayer``
(replay with the SDK's own orchestrator, loaded on first replay), ``values`` (the JSON payload codec) and
``internals`` (the only module that touches azure-functions-durable beyond its documented API).
"""

from replaytest.plugins import FrameworkPlugin, LazyReplayer
from replaytest.plugins.azure_durable.profile import PROFILE

PLUGIN = FrameworkPlugin(
    name="azure_durable",
    profile=PROFILE,
    replayer=LazyReplayer("azure_durable", "replaytest.plugins.azure_durable.replayer:AzureDurableReplayer"),
    import_command="replaytest.plugins.azure_durable.importer:import_command",
)
