"""Precision and recall classes found on held-out public code (applications not used to build the rules):
a LangChain agent whose model calls Restate's middleware journals, Azure SDK clients built locally from a
connection string, and Azure Table Storage calls. Each project is written for the test; expected findings
are marked with ``# expect:`` (see ``test_fixture_projects``) and every other line must stay quiet.
"""

from __future__ import annotations

from pathlib import Path

from test_engine_resolution import assert_marks, write


def test_an_agent_built_with_restate_middleware_is_recorded(tmp_path: Path) -> None:
    write(tmp_path, {
        "agent.py": """
            import restate
            from langchain.agents import create_agent
            from restate.ext.langchain import RestateMiddleware

            journaled = create_agent(model="openai:gpt-4o", tools=[], middleware=[RestateMiddleware()])
            plain = create_agent(model="openai:gpt-4o", tools=[])

            service = restate.Service("agent")

            @service.handler()
            async def run(ctx: restate.Context, question: str) -> str:
                first = await journaled.ainvoke({"messages": [question]})
                second = await plain.ainvoke({"messages": [question]})  # expect: RT201
                local = create_agent(model="openai:gpt-4o", tools=[], middleware=[RestateMiddleware()])
                third = await local.ainvoke({"messages": [question]})
                return str(first) + str(second) + str(third)
        """,
    })
    assert_marks(tmp_path)


def test_azure_clients_built_from_a_connection_string_do_io_only_in_their_methods(tmp_path: Path) -> None:
    write(tmp_path, {
        "orchestrator.py": """
            import azure.durable_functions as df
            from azure.data.tables import TableClient
            from azure.storage.blob import BlobClient

            def orchestrator(context: df.DurableOrchestrationContext):
                blob = BlobClient.from_connection_string("UseDevelopmentStorage=true", "c", "b")
                url = blob.url
                data = blob.download_blob()  # expect: RT202
                table = TableClient.from_connection_string("UseDevelopmentStorage=true", table_name="t")
                table.upsert_entity({"PartitionKey": "p", "RowKey": url})  # expect: RT202
                result = yield context.call_activity("process", data)
                return result

            main = df.Orchestrator.create(orchestrator)
        """,
    })
    assert_marks(tmp_path)


def test_a_client_built_from_a_fresh_name_keeps_its_type_and_its_freshness(tmp_path: Path) -> None:
    write(tmp_path, {
        "app/__init__.py": "",
        "app/storage.py": """
            from azure.storage.blob import BlobClient

            def blob_client(name: str) -> BlobClient:
                return BlobClient.from_connection_string("UseDevelopmentStorage=true", "out", name)
        """,
        "app/flows.py": """
            import uuid

            import httpx
            import azure.durable_functions as df
            from dbos import DBOS
            from app.storage import blob_client

            def orchestrator(context: df.DurableOrchestrationContext):
                blob = blob_client(f"{context.instance_id}-{uuid.uuid4()}.csv")  # expect: RT103
                blob.upload_blob(b"rows")  # expect: RT202
                yield context.call_activity("notify", blob.url)

            main = df.Orchestrator.create(orchestrator)

            def tag(value: str) -> str:
                return value.upper()

            @DBOS.step()
            def charge(order: str) -> None:
                key = tag(str(uuid.uuid4()))
                httpx.post("https://pay", headers={"Idempotency-Key": key})  # expect: RT104
                key = tag(order)
                httpx.post("https://pay", headers={"Idempotency-Key": key})
        """,
    })
    assert_marks(tmp_path)
