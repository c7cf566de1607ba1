"""``critiquelab serve``: the Streamlit command line, its locked-down flags, the database URL."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from annotate_app.cli import serve
from annotate_app.cli.main import app
from data.storage.engine import current_revision, head_revision, make_engine


def _flags(command: list[str]) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    for argument in command:
        if argument.startswith("--"):
            name, _, value = argument[2:].partition("=")
            flags.setdefault(name, []).append(value)
    return flags


def test_the_command_runs_the_router_through_the_launcher() -> None:
    command = serve.streamlit_command()
    assert command[:5] == [
        sys.executable,
        "-m",
        "annotate_app.launch",
        "run",
        str(serve.APP_SCRIPT),
    ]
    assert Path(command[4]) == Path(__file__).resolve().parents[2] / "annotate_app" / "asgi.py"


def test_the_served_script_is_an_st_app_with_the_session_endpoints() -> None:
    """``streamlit run`` finds the ``st.App`` in the script and serves it with uvicorn."""
    from streamlit.web.server.app_discovery import discover_asgi_app

    assert discover_asgi_app(serve.APP_SCRIPT).is_asgi_app
    from annotate_app.asgi import app as asgi_app

    assert asgi_app.script_path == Path(serve.APP_SCRIPT).parent / "app.py"


def test_default_flags_bind_localhost_and_lock_the_server_down() -> None:
    flags = _flags(serve.streamlit_command())
    assert flags == {
        "server.address": ["127.0.0.1"],
        "server.port": ["8501"],
        "server.headless": ["true"],
        "server.enableXsrfProtection": ["true"],
        "server.enableCORS": ["true"],
        "server.maxUploadSize": ["200"],
        "server.fileWatcherType": ["none"],
        "server.runOnSave": ["false"],
        "browser.gatherUsageStats": ["false"],
        "client.toolbarMode": ["minimal"],
        "client.showErrorDetails": ["none"],
        "global.developmentMode": ["false"],
        "server.allowedHosts": ["localhost", "127.0.0.1", "::1"],
    }


def test_another_host_is_bound_as_given_and_served_by_its_names() -> None:
    flags = _flags(serve.streamlit_command(host="0.0.0.0", port=9000))
    assert flags["server.address"] == ["0.0.0.0"] and flags["server.port"] == ["9000"]
    assert flags["server.allowedHosts"][:3] == ["localhost", "127.0.0.1", "::1"]
    assert socket.gethostname().lower() in flags["server.allowedHosts"]
    assert "0.0.0.0" not in flags["server.allowedHosts"]  # no browser sends Host: 0.0.0.0
    flags = _flags(serve.streamlit_command("10.1.2.3", 9000, ["Annotate.Example.org"]))
    assert flags["server.allowedHosts"] == [
        "localhost", "127.0.0.1", "::1", "10.1.2.3", "annotate.example.org"
    ]  # fmt: skip
    assert flags["server.enableXsrfProtection"] == ["true"]


@pytest.mark.slow  # a process of its own: `streamlit config show`
def test_streamlit_accepts_every_flag() -> None:
    # `streamlit config show` parses the same options as `streamlit run` and prints the result.
    command = [sys.executable, "-m", "streamlit", "config", "show"]
    command += serve.streamlit_command(port=8765)[5:]
    shown = subprocess.run(command, capture_output=True, text=True, check=True, timeout=120)
    for line in (
        'address = "127.0.0.1"',
        "port = 8765",
        "enableXsrfProtection = true",
        "enableCORS = true",
        "maxUploadSize = 200",
        'toolbarMode = "minimal"',
        "gatherUsageStats = false",
        'allowedHosts = [\n    "localhost",\n    "127.0.0.1",\n    "::1",\n]',
    ):
        assert f"command-line argument or environment variable\n{line}" in shown.stdout


class _FakeProcess:
    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.command, self.env = command, env

    def wait(self, timeout: float | None = None) -> int:
        return 0


def test_serve_command_upgrades_the_database_and_passes_its_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[_FakeProcess] = []

    def fake_popen(command: list[str], env: dict[str, str], **_: Any) -> _FakeProcess:
        started.append(_FakeProcess(command, env))
        return started[-1]

    monkeypatch.setattr(serve.subprocess, "Popen", fake_popen)
    url = f"sqlite:///{tmp_path / 'served.db'}"
    result = CliRunner().invoke(app, ["--db", url, "serve", "--host", "0.0.0.0", "--port", "8600"])
    assert result.exit_code == 0, result.output
    [process] = started
    assert process.env["CRITIQUELAB_DB"] == url
    assert _flags(process.command)["server.port"] == ["8600"]
    # X-Forwarded-For was believed from any 127.0.0.1 client (uvicorn's default): now from none
    assert process.env["FORWARDED_ALLOW_IPS"] == ""
    assert process.env["CRITIQUELAB_ALLOWED_HOSTS"].startswith("localhost,127.0.0.1,::1,")
    engine = make_engine(url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


def test_allowed_hosts_and_trusted_proxies_reach_the_app_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[_FakeProcess] = []
    monkeypatch.setattr(
        serve.subprocess, "Popen", lambda command, env, **_: started.append(
            _FakeProcess(command, env)) or started[-1]
    )  # fmt: skip
    options = ["--allowed-host", "annotate.example.org", "--trusted-proxy", "10.0.0.5",
               "--trusted-proxy", "192.168.0.0/16"]  # fmt: skip
    result = CliRunner().invoke(app, ["--db", f"sqlite:///{tmp_path / 's.db'}", "serve", *options])
    assert result.exit_code == 0, result.output
    [process] = started
    assert process.env["FORWARDED_ALLOW_IPS"] == "10.0.0.5,192.168.0.0/16"
    assert process.env["CRITIQUELAB_ALLOWED_HOSTS"] == (
        "localhost,127.0.0.1,::1,annotate.example.org"
    )


# --- stopping the real server ----------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Poll until the served port accepts connections (a state no event announces); fail with
    the log when the server exits first. 120 s only bounds a server that never listens."""
    deadline = time.monotonic() + 120
    while not _listening(port):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_server_and_its_child(tmp_path: Path, stop: signal.Signals) -> None:
    port = _free_port()
    database = f"sqlite:///{tmp_path / 'served.db'}"
    critiquelab = str(Path(sys.executable).parent / "critiquelab")
    command = [critiquelab, "--db", database, "serve", "--port", str(port)]
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        _wait_until_listening(process, port, tmp_path / "serve.log")
        [child] = _children(process.pid)
        process.send_signal(stop)
        status = process.wait(timeout=60)  # a ceiling for a hang, not a speed test
    finally:
        if process.poll() is None:
            process.kill()
        log.close()
    output = (tmp_path / "serve.log").read_text()
    assert status == 0, output
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text()
    assert not _listening(port), "the Streamlit child still serves the port"
    assert "error" not in output.lower(), output


@pytest.mark.slow
def test_the_real_server_answers_only_its_host_names_and_trusts_no_forwarded_address(
    tmp_path: Path,
) -> None:
    """DNS rebinding: ``GET /`` and ``POST /session/login`` answered any Host. And uvicorn
    believed ``X-Forwarded-For`` from every 127.0.0.1 client, so a local client could pose as
    any address to the per-address login limit."""
    import http.client

    from sqlmodel import Session, select

    from schemas.tables import LoginAttempt

    port = _free_port()
    database = f"sqlite:///{tmp_path / 'served.db'}"
    critiquelab = str(Path(sys.executable).parent / "critiquelab")
    command = [critiquelab, "--db", database, "serve", "--port", str(port)]
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)

    def ask(method: str, path: str, host: str, **headers: str) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        body = b'{"name": "nobody", "password": "wrong password"}' if method == "POST" else None
        connection.request(
            method, path, body=body,
            headers={"Host": host, "Content-Type": "application/json",
                     "Origin": f"http://{host}", **headers},
        )  # fmt: skip
        response = connection.getresponse()
        answer = (response.status, response.read())
        connection.close()
        return answer

    try:
        _wait_until_listening(process, port, tmp_path / "serve.log")
        for host in ("rebound.attacker.example", f"rebound.attacker.example:{port}"):
            for method, path in (("GET", "/"), ("POST", "/session/login")):
                status, body = ask(method, path, host)
                assert status == 400 and b"does not answer to that host name" in body
        assert ask("GET", "/", f"127.0.0.1:{port}")[0] == 200
        assert ask("GET", "/", f"localhost:{port}")[0] == 200
        status, _ = ask(
            "POST", "/session/login", f"127.0.0.1:{port}", **{"X-Forwarded-For": "203.0.113.9"}
        )
        assert status == 401
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        log.close()
    engine = make_engine(database)
    with Session(engine) as session:
        clients = session.exec(select(LoginAttempt.client)).all()
    engine.dispose()
    assert clients == ["127.0.0.1"]  # one try reached the login, from its real address
