"""Vocabularies the analyzer shares between its parts, defined once here (no libcst import)."""

from __future__ import annotations

# The module-level functions of ``random``: each draws from the hidden shared generator, and each is a
# method of ``random.Random`` too (so a seeded generator, such as Temporal's ``workflow.random()``, is a
# drop-in replacement). The randomness rule and framework fixes both read this list.
RANDOM_FUNCTIONS = (
    "random", "randint", "randrange", "choice", "choices", "shuffle", "sample", "uniform", "gauss",
    "getrandbits", "randbytes", "triangular", "betavariate", "expovariate", "gammavariate",
    "normalvariate", "lognormvariate", "vonmisesvariate", "paretovariate", "weibullvariate", "binomialvariate",
)

# Qualified names that denote the same type as another (results of methods returning the same kind);
# frameworks add theirs in their profile's ``type_aliases``.
TYPE_ALIASES: dict[str, str] = {
    **{f"pathlib.Path.{m}": "pathlib.Path" for m in (
        "parent", "resolve", "absolute", "joinpath", "with_name", "with_suffix", "with_stem", "expanduser",
        "home", "cwd", "relative_to")},
    "pathlib.PurePath": "pathlib.Path", "pathlib.PosixPath": "pathlib.Path", "pathlib.WindowsPath": "pathlib.Path",
    "boto3.session.Session": "boto3.Session", "openai.Client": "openai.OpenAI", "openai.AsyncClient": "openai.AsyncOpenAI",
    "anthropic.Client": "anthropic.Anthropic", "anthropic.AsyncClient": "anthropic.AsyncAnthropic",
    "google.genai.client.Client": "google.genai.Client", "datetime.datetime.datetime": "datetime.datetime",
    # Azure SDK clients built from a connection string or URL: the constructor does no I/O, the
    # client's methods do (``BlobClient.from_connection_string(...).download_blob()``).
    **{f"{cls}.{factory}": cls for cls in (
        "azure.storage.blob.BlobServiceClient", "azure.storage.blob.BlobClient", "azure.storage.blob.ContainerClient",
        "azure.data.tables.TableServiceClient", "azure.data.tables.TableClient",
    ) for factory in ("from_connection_string", "from_blob_url", "from_container_url", "from_table_url")},
    # Getters that build a client for one container, blob or table, locally: the I/O is in what is called
    # on the client they return (``service.get_container_client("c").upload_blob(...)``).
    "azure.storage.blob.BlobServiceClient.get_container_client": "azure.storage.blob.ContainerClient",
    "azure.storage.blob.BlobServiceClient.get_blob_client": "azure.storage.blob.BlobClient",
    "azure.storage.blob.ContainerClient.get_blob_client": "azure.storage.blob.BlobClient",
    "azure.data.tables.TableServiceClient.get_table_client": "azure.data.tables.TableClient",
}

# Calls whose result is a client object typed by its first string argument: ``boto3.client("s3")``
# resolves to ``boto3.client[s3]``, so rule tables can name one service's methods.
TYPED_FACTORIES = frozenset({
    "boto3.client", "boto3.resource", "boto3.Session.client", "boto3.Session.resource",
    "boto3.session.Session.client", "boto3.session.Session.resource",
})

# Calls that list a directory, in the order the filesystem returns.
LISTING_CALLS = frozenset({
    "os.listdir", "os.scandir", "glob.glob", "glob.iglob", "pathlib.Path.iterdir", "pathlib.Path.glob",
    "pathlib.Path.rglob", "os.walk",
})
# Value kinds (``ModuleFacts.kind_of``) whose iteration order is not reproducible.
UNORDERED = frozenset({"set", "listing", "dict"})

# Calls that open a file: the summaries keep their argument text (wherever they are), since the mode tells a
# read from a write (the graph-node rule reports only writes).
OPEN_CALLS = frozenset({"builtins.open", "io.open", "aiofiles.open", "pathlib.Path.open"})
