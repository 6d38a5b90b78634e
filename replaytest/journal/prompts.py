"""The journal's name for ``replaytest.prompts.Prompt`` (kept so ``from replaytest.journal import Prompt``
and older imports keep working); prompts are engine-neutral and live in ``replaytest.prompts``."""

from replaytest.prompts import Prompt, prompt_manifest, uses_prompts

__all__ = ["Prompt", "prompt_manifest", "uses_prompts"]
