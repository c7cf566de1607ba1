"""Accounts and secrets: argon2 password hashes, login rate limit, logout, API keys kept out of
logs, the database and exports."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest
from argon2 import PasswordHasher
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from data.services.auth import MAX_FAILED_ATTEMPTS, login, logout, user_for_token
from data.services.users import create_user
from data.storage.engine import session_scope
from schemas.tables import AuthSession, User

PASSWORD = "correct horse battery staple"
API_KEY = "sk-test-SECRET-4b1d9e0c7a"


def _database_bytes(db_url: str) -> bytes:
    path = Path(db_url.removeprefix("sqlite:///"))
    return b"".join(p.read_bytes() for p in (path, Path(f"{path}-wal")) if p.exists())


@pytest.mark.production_password_cost
def test_passwords_are_stored_as_slow_argon2id_hashes(engine: Engine, db_url: str) -> None:
    with session_scope(engine) as session:
        create_user(session, "alice", PASSWORD, "annotator")
    with session_scope(engine) as session:
        stored = session.exec(select(User.password_hash).where(User.name == "alice")).one()
    assert stored.startswith("$argon2id$v=19$"), stored[:20]
    params = dict(part.split("=") for part in stored.split("$")[3].split(","))
    # OWASP minimum for argon2id: 19 MiB memory, 2 iterations.
    assert int(params["m"]) >= 19_456 and int(params["t"]) >= 2, params
    assert PasswordHasher().verify(stored, PASSWORD)
    assert PASSWORD.encode() not in _database_bytes(db_url)


def test_login_is_rate_limited_even_with_the_right_password(engine: Engine) -> None:
    with session_scope(engine) as session:
        create_user(session, "alice", PASSWORD, "annotator")
    for _ in range(MAX_FAILED_ATTEMPTS):
        assert login(engine, "alice", "wrong password!").outcome == "wrong_credentials"
    result = login(engine, "alice", PASSWORD)
    assert result.outcome == "rate_limited" and result.token is None
    assert "Too many failed logins" in result.message


def test_logout_ends_the_session_and_tokens_are_stored_hashed(engine: Engine, db_url: str) -> None:
    with session_scope(engine) as session:
        create_user(session, "alice", PASSWORD, "annotator")
    result = login(engine, "alice", PASSWORD)
    assert result.ok and result.token
    with session_scope(engine) as session:
        assert user_for_token(session, result.token) is not None
        assert result.token not in session.exec(select(AuthSession.token_hash)).all()
    assert result.token.encode() not in _database_bytes(db_url)
    with session_scope(engine) as session:
        assert logout(session, result.token)
    with session_scope(engine) as session:
        assert user_for_token(session, result.token) is None


class _FakeOpenAI(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint: answers every chat completion with a valid rating."""

    seen_authorization: list[str] = []
    fail_with: int | None = None

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen_authorization.append(self.headers.get("Authorization", ""))
        if type(self).fail_with:
            body = json.dumps({"error": {"message": "invalid api key"}}).encode()
            self.send_response(type(self).fail_with)
        else:
            body = json.dumps({
                "choices": [{"message": {"content": '{"Rating": 7, "Reason": "Counts match."}'}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }).encode()  # fmt: skip
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def fake_openai() -> Iterator[str]:
    _FakeOpenAI.seen_authorization = []
    _FakeOpenAI.fail_with = None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _critiquelab_process(db_url: str, argv: list[str], cwd: Path) -> tuple[int, str]:
    """The installed console script in its own process (a real run, with its own logging and
    no event loop of the test's browser in the way); returns (exit code, stdout + stderr)."""
    script = Path(sys.executable).with_name("critiquelab")
    done = subprocess.run(
        [str(script), "--db", db_url, "--debug", *argv], capture_output=True, text=True,
        timeout=180, cwd=cwd, env={**os.environ, "OPENAI_API_KEY": API_KEY},
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow  # a process of its own
def test_api_key_never_reaches_logs_database_or_exports(
    engine: Engine, db_url: str, tmp_path: Path, fake_openai: str, load_test: ModuleType,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    from annotate_app.cli.main import app

    load_test.seed_campaign(engine, units=6, annotators=1, overlap=1)
    caplog.set_level(logging.DEBUG)
    judge = ["judge", "run", "--base-url", fake_openai, "--campaign", "load"]
    outputs = []
    code, output = _critiquelab_process(
        db_url, [*judge, "--model", "fake-gpt", "--judge-name", "gpt-fake"], tmp_path
    )
    outputs.append(output)
    assert code == 0, output[-2000:]
    assert _FakeOpenAI.seen_authorization and set(_FakeOpenAI.seen_authorization) == {
        f"Bearer {API_KEY}"
    }, "the key was not sent: this test would prove nothing"
    _FakeOpenAI.fail_with = 401  # a rejected key: error messages must not echo it
    code, output = _critiquelab_process(
        db_url, [*judge, "--model", "fake-gpt-2", "--judge-name", "gpt-fake-2"], tmp_path
    )
    outputs.append(output)
    assert code != 0 and "401" in output, output[-2000:]
    exported = tmp_path / "exports"
    exported.mkdir()
    runner = CliRunner()
    for command in (
        ["export", "judgments", "--format", "jsonl", "-o", str(exported / "judgements.jsonl")],
        ["export", "judgments", "--format", "csv", "-o", str(exported / "judgements.csv")],
        ["export", "dataset", "load", "-o", str(exported / "dataset.jsonl")],
    ):
        result = runner.invoke(app, ["--db", db_url, *command])
        outputs.append(result.output + (result.stderr or ""))
        assert result.exit_code == 0, outputs[-1]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".jsonl" for p in files) and any(p.name.endswith(".db") for p in files)
    leaks = [str(p) for p in files if API_KEY.encode() in p.read_bytes()]
    leaks += [f"cli output {n}" for n, text in enumerate(outputs) if API_KEY in text]
    leaks += ["log records"] if API_KEY in caplog.text else []
    assert leaks == [], f"the API key leaked into: {leaks}"


def test_an_admin_locked_out_gets_back_in_with_users_reset_password(
    engine: Engine, db_url: str
) -> None:
    """An attacker keeps the only admin's name locked from everywhere the admin has not logged
    in before; the operator resets the password on the command line and the lock is gone."""
    from annotate_app.cli.main import app

    with session_scope(engine) as session:
        create_user(session, "root", PASSWORD, "admin")
    old = login(engine, "root", PASSWORD, client="10.0.0.5")
    assert old.ok and old.token
    for _ in range(MAX_FAILED_ATTEMPTS + 3):
        login(engine, "root", "guess", client="203.0.113.66")
    assert login(engine, "root", PASSWORD, client="10.0.0.9").outcome == "rate_limited"
    result = CliRunner().invoke(
        app, ["--db", db_url, "users", "reset-password", "root"], input="new admin password\n"
    )
    assert result.exit_code == 0, result.output
    assert "reset the password of 'root'; 1 open session(s) ended" in result.output
    assert login(engine, "root", "new admin password", client="10.0.0.9").ok
    with session_scope(engine) as session:
        assert user_for_token(session, old.token) is None
    unknown = CliRunner().invoke(
        app, ["--db", db_url, "users", "reset-password", "nobody"], input="whatever pass\n"
    )
    assert unknown.exit_code == 2 and "no user called 'nobody'" in unknown.output
    cased = CliRunner().invoke(
        app, ["--db", db_url, "users", "reset-password", "ROOT"], input="whatever pass\n"
    )  # adding 'ROOT', as the message said, would be refused: the names match up to case
    assert cased.exit_code == 2 and "did you mean 'root'?" in cased.output
