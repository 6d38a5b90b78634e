"""Vocabularies the analyzer shares between its parts, defined once here (no libcst import)."""

from __future__ import annotations

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
}
