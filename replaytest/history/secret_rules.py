"""The credential shapes the redactor finds by value, as data (one ``SecretRule`` per shape), and the
scan that finds them in a string (``replace_secrets``, ``holds_secret``).

The facts of each rule (a provider's token prefix, its alphabet and length) are taken from published
secret-detection rule sets, named in a comment on the rule: gitleaks' default configuration (rule ids
as there) and Yelp's detect-secrets plugins. The patterns are written here, for Python's ``re``; they
are a little looser than the published ones on length (a token cut short in an error message still
leaks), never on the prefix, so ordinary ids, sha256 digests, UUIDs and base64 stay untouched.

Two kinds of rule:

- **shapes** recognisable on their own (``ghp_…``, ``AKIA…``, a PEM private key block): everything
  the pattern matches is the secret;
- **context** rules, where a secret is recognisable only by what stands before it (``password=…``,
  ``AccountKey=…``, ``Bearer …``, ``https://user:…@host``): the group named ``secret`` is the secret,
  the rest (the key name, the URL's host) is kept, and ``min_entropy`` / ``not_a_word`` say what the
  secret must look like, so ``password=required`` or ``Token validation failed`` are not secrets.

Rules run in table order, each on the text the earlier ones left; nothing inside a pseudonym
(``[redacted…]``) is taken for a secret, so nothing is redacted twice, now or on a second run.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretRule:
    """``id`` names the shape in pseudonyms (``[redacted-<id>:<hash>]``); ``pattern`` finds it (with a
    group named ``secret`` for context rules); ``min_entropy`` is the Shannon entropy, in bits per
    character, that the secret must reach; ``not_a_word`` refuses a secret that is a plain word
    (letters only, upper case at most at its start); ``hints``: lower-case words one of which the
    lower-cased text must hold for the pattern to be tried at all (patterns that do not start with a
    literal are slow to search)."""

    id: str
    pattern: str
    min_entropy: float = 0.0
    not_a_word: bool = False
    hints: tuple[str, ...] = ()


SHAPE_RULES: tuple[SecretRule, ...] = (
    # gitleaks private-key; PGP blocks and a block cut short (no END line) are included.
    # The body (base64, blanks, ``\n`` escapes, ``Proc-Type:``/``DEK-Info:`` headers) runs up to the
    # first ``-----``, so a block without its END line is scanned once, not once per BEGIN.
    SecretRule("private-key", r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=\s\\:,.]|-(?!----))*"
                              r"(?:-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"),
    # gitleaks jwt
    SecretRule("jwt", r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"),
    # gitleaks anthropic-api-key, anthropic-admin-api-key (before the generic ``sk-`` below)
    SecretRule("anthropic-api-key", r"\bsk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{20,}"),
    # gitleaks openai-api-key (``sk-``, ``sk-proj-``, ``sk-svcacct-`` …) and keys of the same form
    SecretRule("api-key", r"\bsk-[A-Za-z0-9_-]{16,}"),
    # gitleaks stripe-access-token (secret and restricted keys; publishable ``pk_`` keys are public)
    SecretRule("stripe-key", r"\b[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}\b"),
    # gitleaks aws-access-token, plus the id prefixes of AWS's unique-identifier documentation
    SecretRule("aws-access-key", r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[A-Z0-9]{16}\b"),
    # gitleaks github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat
    SecretRule("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    # gitleaks gitlab-pat, gitlab-ptt, gitlab-deploy-token, gitlab-runner-authentication-token,
    # gitlab-cicd-job-token, gitlab-feed-token, gitlab-incoming-mail-token, gitlab-kubernetes-agent-token,
    # gitlab-oauth-app-secret, gitlab-scim-token, gitlab-feature-flag-client-token
    SecretRule("gitlab-token", r"\bgl(?:pat|ptt|dt|rt|cbt|ft|imt|agent|oas|soat|ffct)-[A-Za-z0-9_-]{20,}"),
    # gitleaks slack-bot-token, slack-user-token, slack-legacy-*-token, slack-config-access-token,
    # slack-app-token
    SecretRule("slack-token", r"\b(?:xox(?:[abposr]|e(?:\.xox[bp])?)-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,})"),
    # gitleaks slack-webhook-url
    SecretRule("slack-webhook", r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}"),
    # gitleaks gcp-api-key
    SecretRule("google-api-key", r"\bAIza[0-9A-Za-z_-]{30,}"),
    # gitleaks npm-access-token
    SecretRule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    # gitleaks pypi-upload-token (the prefix is the base64 of the token's "pypi.org" caveat)
    SecretRule("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    # gitleaks huggingface-access-token
    SecretRule("huggingface-token", r"\bhf_[A-Za-z]{34}\b"),
    # gitleaks sendgrid-api-token
    SecretRule("sendgrid-api-key", r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    # gitleaks twilio-api-key (API key SIDs; account SIDs ``AC…`` are identifiers, not secrets)
    SecretRule("twilio-api-key", r"\bSK[0-9a-fA-F]{32}\b"),
    # gitleaks shopify-access-token, shopify-custom-access-token, shopify-private-app-access-token,
    # shopify-shared-secret
    SecretRule("shopify-token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    # gitleaks digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token
    SecretRule("digitalocean-token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    # gitleaks databricks-api-token
    SecretRule("databricks-token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b"),
    # gitleaks postman-api-token
    SecretRule("postman-api-key", r"\bPMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}\b"),
    # gitleaks age-secret-key
    SecretRule("age-secret-key", r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"),
)

# Characters a secret value of a context rule may hold: not blanks, quotes, separators or brackets,
# so a template (``${DB_PASSWORD}``, ``<password>``) or a pseudonym (``[redacted…]``) is never one.
_VALUE = r"[^\s'\"`,;&<>()\[\]{}\\]"

CONTEXT_RULES: tuple[SecretRule, ...] = (
    # detect-secrets AzureStorageKeyDetector (``AccountKey=``), and ``SharedAccessKey=`` of Service Bus
    # and Event Hubs connection strings
    SecretRule("azure-key", r"\b(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})",
               hints=("accesskey=", "accountkey=")),
    # HTTP credentials: gitleaks generic-api-key's context and detect-secrets' ``Basic``/``Bearer`` use;
    # the scheme word is kept, the credential must not be a plain word ("Token validation failed").
    SecretRule("bearer", r"\b(?:Bearer|Basic|Token)\s{1,8}(?P<secret>[A-Za-z0-9._~+/=-]{8,})", not_a_word=True,
               hints=("bearer", "basic", "token")),
    # detect-secrets BasicAuthDetector: the password of ``scheme://user:password@host``
    SecretRule("url-password", r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:/?#@'\"<>\[\]]{0,256}:(?P<secret>[^\s/?#@'\"<>\[\]]{1,256})@",
               hints=("://",)),
    # gitleaks generic-api-key, detect-secrets KeywordDetector: ``name = value`` / ``"name": "value"``
    # where the name holds a secret's keyword (the key-name fragments of ``redact.DEFAULT_KEY_PATTERN``)
    # and the value is of high entropy (gitleaks asks 3.5 bits; 3.0 lets 8–11 character passwords in).
    SecretRule(
        "secret-assignment",
        r"(?i:password|passwd|passphrase|pwd|secret|token(?!s|[_-]?(?:count|ize|limit|type|usage))|api[_-]?key|access[_-]?key"
        r"|auth[_-]?key|private[_-]?key|credential)[\w.-]{0,40}\\?[\"']?\s{0,8}(?::=|=>|[:=])\s{0,8}\\?[\"']?(?P<secret>"
        + _VALUE + r"{8,256})",
        min_entropy=3.0,
        hints=("pass", "pwd", "secret", "token", "key", "credential"),
    ),
)


RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in (*SHAPE_RULES, *CONTEXT_RULES))


@dataclass(frozen=True)
class _Compiled:
    rule: SecretRule
    regex: re.Pattern[str]
    # A leading ``\b`` is checked after the match instead: a pattern that starts with a literal is
    # searched for that literal, many times faster than trying the pattern at every position.
    word_start: bool
    secret_group: int | str


def _compile(rule: SecretRule) -> _Compiled:
    word_start = rule.pattern.startswith(r"\b")
    regex = re.compile(rule.pattern[2:] if word_start else rule.pattern)
    return _Compiled(rule, regex, word_start, "secret" if "secret" in regex.groupindex else 0)


_COMPILED: tuple[_Compiled, ...] = tuple(_compile(rule) for rule in (*SHAPE_RULES, *CONTEXT_RULES))


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text`` as a sample of its own characters."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(count / size * math.log2(count / size) for count in Counter(text).values())


def _is_word(text: str) -> bool:
    return text.isalpha() and (text[1:].islower() or text.isupper())


# Exactly the pseudonyms ``history/redact.py`` writes (``[redacted:<hash>]``, ``[redacted-<rule id>:<hash>]``):
# other bracketed text that merely starts with "[redacted" shields nothing.
_PSEUDONYM = re.compile(r"\[redacted(?:-[a-z0-9]+(?:-[a-z0-9]+)*)?:[0-9a-f]{10}\]")


def _pseudonyms(text: str) -> list[tuple[int, int]]:
    """The spans of the pseudonyms already in ``text`` (by earlier rules, or an earlier redaction)."""
    return [match.span() for match in _PSEUDONYM.finditer(text)] if "[redacted" in text else []


def _inside(spans: list[tuple[int, int]], position: int) -> bool:
    index = bisect.bisect_right(spans, (position, math.inf))  # spans starting at or before it
    return index > 0 and spans[index - 1][0] <= position < spans[index - 1][1]


def _secret_span(compiled: _Compiled, match: re.Match[str], pseudonyms: list[tuple[int, int]]) -> tuple[int, int] | None:
    """Where the secret is in ``match``, or None when the rule's checks say it holds none."""
    text, start = match.string, match.start()
    if compiled.word_start and start and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None
    low, high = match.span(compiled.secret_group)
    if pseudonyms and _inside(pseudonyms, low):
        return None
    secret = text[low:high]
    if compiled.rule.min_entropy and shannon_entropy(secret) < compiled.rule.min_entropy:
        return None
    if compiled.rule.not_a_word and _is_word(secret):
        return None
    return low, high


def _candidates(text: str) -> list[_Compiled]:
    """The rules whose pattern occurs in ``text`` (a rule with hints only if one of them does)."""
    lowered = None
    found = []
    for compiled in _COMPILED:  # the hot loop of redaction: one C-level search per rule
        if compiled.rule.hints:
            lowered = text.lower() if lowered is None else lowered
            if not any(hint in lowered for hint in compiled.rule.hints):
                continue
        if compiled.regex.search(text) is not None:
            found.append(compiled)
    return found


def replace_secrets(text: str, replace: Callable[[str, str], str]) -> str:
    """``text`` with each secret the rules find replaced by ``replace(rule_id, secret)``."""
    for compiled in _candidates(text):
        # Found in the text as it was; an earlier rule's replacement may have taken it since.
        if compiled.regex.search(text) is None:
            continue
        pseudonyms = _pseudonyms(text)

        def substitute(match: re.Match[str], compiled: _Compiled = compiled, pseudonyms: list[tuple[int, int]] = pseudonyms) -> str:
            span = _secret_span(compiled, match, pseudonyms)
            if span is None:
                return match.group()
            whole, offset = match.group(), match.start()
            low, high = span[0] - offset, span[1] - offset
            return whole[:low] + replace(compiled.rule.id, whole[low:high]) + whole[high:]

        text = compiled.regex.sub(substitute, text)
    return text


def holds_secret(text: str) -> bool:
    """Whether any rule finds a secret in ``text``."""
    pseudonyms = _pseudonyms(text)
    return any(
        any(_secret_span(compiled, match, pseudonyms) for match in compiled.regex.finditer(text))
        for compiled in _candidates(text)
    )
