"""``import restate`` against an admin endpoint that answers with hostile bytes (``hostile_admin``, a stand-in on
127.0.0.1): every answer is read within the history size limit and one deadline, never followed to another
server, and parsed as strict JSON. Each hostile answer is exit 2 with one line naming the URL and what was
wrong, no traceback, and no history file (the output folder is not even made)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import click
import hostile_admin as ha
import pytest

from replaytest.history.http_read import AnswerTooLargeError, DeadlineError, HTTPReadError, request_json
from replaytest.plugins.restate.importer import import_invocations

_TIMEOUT = 120
_LIMIT = 1024 * 1024  # max-history-bytes of the project the CLI runs in


def _import(url: str, folder: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``replaytest import restate`` in ``folder``, a project whose history size limit is ``_LIMIT``."""
    (folder / "pyproject.toml").write_text(f"[tool.replaytest.replay]\nmax-history-bytes = {_LIMIT}\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "replaytest", "import", "restate", "--admin-url", url, "--out", "out", "--no-redact", *extra],
        capture_output=True, text=True, timeout=_TIMEOUT, cwd=folder, env=env,
    )


def _refused(completed: subprocess.CompletedProcess[str], folder: Path, *said: str) -> str:
    """The one error line of a refused import, checked: exit 2, each of ``said`` in it, nothing written."""
    assert completed.returncode == 2, completed.stdout + completed.stderr
    assert "Traceback" not in completed.stderr, completed.stderr
    errors = [line for line in completed.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and completed.stderr.strip() == errors[0], completed.stderr
    for text in said:
        assert text in errors[0], errors[0]
    assert "nothing was written" in errors[0]
    assert not (folder / "out").exists()
    return errors[0]


def test_the_stand_in_admin_api_imports_when_it_answers_well(tmp_path: Path) -> None:
    """The hostile cases below differ from this one only in the answer."""
    with ha.hostile_admin(ha.valid_answer) as admin:
        completed = _import(admin.url, tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert sorted(path.name for path in (tmp_path / "out").glob("*.json")) == ["inv_1.json", "inv_2.json", "inv_3.json"]


def test_a_never_ending_body_stops_at_the_size_limit(tmp_path: Path) -> None:
    # The server gives up after 64 MiB: a reader without the limit would find a body that is not JSON.
    with ha.hostile_admin(ha.never_ending(give_up_after=64 * 1024 * 1024)) as admin:
        completed = _import(admin.url, tmp_path)
        sent = admin.sent
    _refused(completed, tmp_path, f"{admin.url}/query: the answer is more than the limit of {_LIMIT:,} bytes",
             "max-history-bytes")
    # What the kernel's socket buffers took beyond the limit aside, the server could not send more.
    assert sent < _LIMIT + 32 * 1024 * 1024


def test_a_huge_content_length_is_refused_before_reading(tmp_path: Path) -> None:
    with ha.hostile_admin(ha.announced(3 * 1024**3)) as admin:
        completed = _import(admin.url, tmp_path)
    _refused(completed, tmp_path, "the answer announces 3,221,225,472 bytes (Content-Length), more than the limit of "
             f"{_LIMIT:,} bytes; not read")


def test_a_200000_deep_answer_is_refused_as_too_deep(tmp_path: Path) -> None:
    body = b'{"rows": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with ha.hostile_admin(ha.fixed(200, body)) as admin:
        completed = _import(admin.url, tmp_path)
    _refused(completed, tmp_path, "the answer is not JSON replaytest accepts", "nested too deeply")


@pytest.mark.parametrize(("head_at_once", "every"), [(False, 0.5), (True, 0.5)], ids=["whole-answer", "body-only"])
def test_a_trickled_answer_is_cut_off_at_the_deadline(tmp_path: Path, head_at_once: bool, every: float) -> None:
    # A byte every 0.5 s: the whole answer would take a minute or more, yet every single read is quick.
    answer = ha.trickle(b'{"rows": []}' + b" " * 110, every, head_at_once=head_at_once)
    with ha.hostile_admin(answer) as admin:
        started = time.monotonic()
        completed = _import(admin.url, tmp_path, "--timeout", "1")
        took = time.monotonic() - started
    _refused(completed, tmp_path, f"{admin.url}/query: no complete answer within 1 s, the deadline for the whole answer",
             "--timeout")
    # Generous: cut off when the deadline passed, not at the next read that happens to end (a minute on).
    assert took < 30, took


def test_a_server_that_never_answers_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    with ha.hostile_admin(ha.slow_start(60, ha.valid_answer)) as admin:
        completed = _import(admin.url, tmp_path, "--timeout", "1")
    _refused(completed, tmp_path, "no complete answer within 1 s")


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_naming_both(tmp_path: Path, status: int) -> None:
    """Another port of 127.0.0.1 is another origin; followed, its empty answer would be a green import of nothing."""
    with ha.hostile_admin(ha.fixed(200, b'{"rows": []}')) as elsewhere:
        with ha.hostile_admin(ha.redirect(status, f"{elsewhere.url}/query")) as admin:
            completed = _import(admin.url, tmp_path)
        asked_elsewhere = list(elsewhere.requests)
    _refused(completed, tmp_path, f"the server redirects (HTTP {status}) to {elsewhere.url}/query, another origin than "
             f"{admin.url}; not followed")
    assert asked_elsewhere == []


def test_a_same_origin_307_is_followed_with_its_query(tmp_path: Path) -> None:
    def answer(sql: str, out: ha.Out) -> None:
        if len(admin.requests) % 2:  # every first asking of a query is sent on
            out.write(ha.response(307, b"", {"location": "/v2/query"}))
        else:
            ha.valid_answer(sql, out)

    with ha.hostile_admin(answer) as admin:
        completed = _import(admin.url, tmp_path)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert len(list((tmp_path / "out").glob("*.json"))) == 3
    assert [head.split("\r\n")[0] for head in admin.heads] == ["POST /query HTTP/1.1", "POST /v2/query HTTP/1.1"] * 2
    assert admin.requests[0] == admin.requests[1] and "sys_invocation" in admin.requests[0]


def test_a_same_origin_302_of_the_post_and_a_redirect_loop_are_refused(tmp_path: Path) -> None:
    with ha.hostile_admin(ha.redirect(302, "/elsewhere")) as admin:
        completed = _import(admin.url, tmp_path)
    _refused(completed, tmp_path, f"redirects (HTTP 302) to {admin.url}/elsewhere, which would turn the POST into a GET")
    with ha.hostile_admin(ha.redirect(307, "/query")) as admin:
        completed = _import(admin.url, tmp_path)
        asked = len(admin.requests)
    _refused(completed, tmp_path, "more than 5 redirects")
    assert asked == 6


def test_a_redirect_to_no_url_is_refused(tmp_path: Path) -> None:
    """Found by the fuzz benchmark: an IPv6 host without its closing bracket was a ValueError out of the import."""
    with ha.hostile_admin(ha.redirect(307, "http://[::1/query")) as admin:
        completed = _import(admin.url, tmp_path)
    _refused(completed, tmp_path, "the server redirects (HTTP 307) to http://[::1/query, which is no URL; not followed")


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (ha.fixed(200, b"<html>a login page</html>"), "the answer is not JSON replaytest accepts (line 1, column 1"),
        (ha.fixed(200, b'{"rows": [{"id": "inv_1", "id": "inv_2"}]}'), "duplicate key"),
        (ha.fixed(200, b'{"rows": [\xff]}'), "the answer is not JSON: byte 10 is not UTF-8"),
        (ha.truncated(1000, b'{"rows": [{"id": "inv_1"}'), "the answer ended after 25 of the 1,000 bytes it announced (truncated)"),
        (ha.fixed(200, b'{"rows": [{"id": "inv_1"}', length=False), "the answer is not JSON replaytest accepts"),
        (lambda sql, out: out.write(b"SSH-2.0-OpenSSH_9.6\r\n"), "the answer is not HTTP"),
        (lambda sql, out: None, "the server closed the connection without an answer"),
        (ha.fixed(503, b"upstream down\n\x1b[2J"), "HTTP 503: upstream down\\n\\x1b[2J"),
    ],
    ids=["not-json", "duplicate-key", "not-utf8", "truncated", "cut-short", "not-http", "no-answer", "error-status"],
)
def test_a_malformed_answer_is_one_line_naming_the_url(tmp_path: Path, answer: ha.Answer, said: str) -> None:
    with ha.hostile_admin(answer) as admin:
        completed = _import(admin.url, tmp_path)
    line = _refused(completed, tmp_path, f"{admin.url}/query: ", said)
    assert "\x1b" not in line


def test_a_bad_journal_answer_writes_nothing_though_the_invocations_were_read(tmp_path: Path) -> None:
    """The invocations' answer is good, the journals' is not: not one history of the good part is written."""

    def answer(sql: str, out: ha.Out) -> None:
        if "sys_journal" in sql:
            ha.truncated(100_000, b'{"rows": [')(sql, out)
        else:
            ha.valid_answer(sql, out)

    with ha.hostile_admin(answer) as admin:
        completed = _import(admin.url, tmp_path)
    _refused(completed, tmp_path, "(truncated)")


def test_the_environment_proxy_is_used(tmp_path: Path) -> None:
    """As urllib did before: ``http_proxy`` (with its credentials) carries the query, whole URL and all."""
    with ha.hostile_admin(ha.valid_answer) as proxy:
        port = proxy.url.rsplit(":", 1)[1]
        env = {key: value for key, value in os.environ.items() if key.lower() not in ("http_proxy", "no_proxy")}
        env["http_proxy"] = f"http://ann:s%40cret@127.0.0.1:{port}"
        completed = _import("http://restate-admin.invalid:9070", tmp_path, env=env)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert len(list((tmp_path / "out").glob("*.json"))) == 3
    head = proxy.heads[0].split("\r\n")
    assert head[0] == "POST http://restate-admin.invalid:9070/query HTTP/1.1"
    assert "Proxy-Authorization: Basic YW5uOnNAY3JldA==" in head  # ann:s@cret
    assert "Host: restate-admin.invalid:9070" in head


# --- memory, measured in this process ----------------------------------------------------------------------


def _peak_while(work) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        work()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def test_the_reader_holds_no_more_than_the_limit_of_a_never_ending_body() -> None:
    limit = 4 * 1024 * 1024
    with ha.hostile_admin(ha.never_ending(give_up_after=256 * 1024 * 1024)) as admin:
        def read() -> None:
            with pytest.raises(AnswerTooLargeError, match="more than the limit of 4,194,304 bytes"):
                request_json(f"{admin.url}/query", method="POST", body=b"{}", max_bytes=limit)

        peak = _peak_while(read)
    assert peak < limit + 2 * 1024 * 1024, f"peak {peak:,} bytes"


def test_the_reader_sizes_nothing_from_a_content_length() -> None:
    """A 3 GiB Content-Length within a (larger) limit, and 12 bytes sent: the reader holds what came, no more."""
    with ha.hostile_admin(ha.announced(3 * 1024**3)) as admin:
        def read() -> None:
            with pytest.raises(DeadlineError, match="no complete answer within 1 s"):
                request_json(f"{admin.url}/query", method="POST", body=b"{}", max_bytes=4 * 1024**3, deadline_seconds=1)

        peak = _peak_while(read)
    assert peak < 1024 * 1024, f"peak {peak:,} bytes"


def test_the_importer_in_process_raises_a_click_error_and_writes_nothing(tmp_path: Path) -> None:
    with ha.hostile_admin(ha.trickle(b'{"rows": []}', 0.05)) as admin:
        with pytest.raises(click.ClickException, match="no complete answer within 0.3 s"):
            import_invocations(admin.url, tmp_path / "out", max_bytes=_LIMIT, deadline_seconds=0.3)
    assert not (tmp_path / "out").exists()


def test_a_get_follows_a_same_origin_302_and_no_other() -> None:
    def answer(sql: str, out: ha.Out) -> None:
        if admin.heads[-1].startswith("GET /old "):
            out.write(ha.response(302, b"", {"location": f"{admin.url}/new"}))
        else:
            out.write(ha.response(200, b'{"ok": true}'))

    with ha.hostile_admin(answer) as admin:
        assert request_json(f"{admin.url}/old", max_bytes=_LIMIT) == {"ok": True}
        assert [head.split("\r\n")[0] for head in admin.heads] == ["GET /old HTTP/1.1", "GET /new HTTP/1.1"]
        # The same address under another name is another origin.
        port = admin.url.rsplit(":", 1)[1]
        with pytest.raises(HTTPReadError, match=f"to {admin.url}/new, another origin than http://localhost:{port}"):
            request_json(f"http://localhost:{port}/old", max_bytes=_LIMIT)
