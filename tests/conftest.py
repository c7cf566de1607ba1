"""Shared fixtures: fresh databases (SQLite and a real PostgreSQL server), the test data folders.

PostgreSQL and browser tests skip with a reason when the server or browser is missing, unless
``CRITIQUELAB_REQUIRE_E2E=1`` (set by ``.ci/run``), where a missing one is a failure.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from sqlalchemy.engine import Engine

import data.services.users
from data.storage.engine import make_engine, upgrade_database
from tests.skips import missing
from tests.system_binaries import postgres_bindir, postgres_missing

# One thread per test process: the test command runs more processes than cores (pytest-xdist),
# and torch's thread pool spinning on a busy core made a tiny L-BFGS fit over ten times slower
# (11.8 s → 0.9 s for test_head's cross-validation at load 3.5). Nothing above imports torch.
for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES_DIR = REPO_ROOT / "tests" / "fixtures"
ALIGNMMBENCH_ENV = "CRITIQUELAB_ALIGNMMBENCH_DIR"

# Fixtures shared by every test folder: the sample project built once per session
# (tests/sample_template.py), and one set of browser fixtures (app server, Chromium, page, login):
# a second Playwright instance in the same session would collide with the first one's event loop.
pytest_plugins = ["tests.sample_template", "tests.browser_fixtures"]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` runs one and a half test processes per core (3 on 2 cores): a browser or
    served-app test spends part of its time waiting for another process (the Streamlit server,
    Chromium, PostgreSQL), so one process per core left a core idle (752 s for the whole suite
    with two processes against 691 s with four, 2026-12-02); but each browser test's own
    processes (Chromium, the app server) then compete for the same cores, and four were too many:
    449 s with three against 527 s with four (2026-12-04, load average 1.3 at the start of both).
    The fast tier (``-m "not slow"``) waits for no other process, and each test process collects
    every file (about 10 s of CPU), so it runs one process per core."""
    cores = len(os.sched_getaffinity(0))
    return cores if config.option.markexpr == "not slow" else max(cores + cores // 2, 1)


# Real argon2 at its smallest cost in every test: the production cost (64 MiB, 3 passes) took
# 0.2 s of CPU per hash, and hundreds of tests create users (2-6 each) or log in. The hashes
# still carry their own parameters, so verification is the real thing. The one test of the
# production cost opts out with ``@pytest.mark.production_password_cost``.
CHEAP_PASSWORD_HASHER = PasswordHasher(time_cost=1, memory_cost=1024)


@pytest.fixture(autouse=True)
def cheap_password_hashing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.node.get_closest_marker("production_password_cost") is None:
        monkeypatch.setattr(data.services.users, "_hasher", CHEAP_PASSWORD_HASHER)


@pytest.fixture(scope="session", autouse=True)
def component_manifests_scanned_once() -> Iterator[None]:
    """Streamlit's AppTest scans the metadata of every installed distribution (about 500 here)
    for component manifests on each new ``AppTest``: 0.2 s of CPU (0.8 s wall on a busy machine)
    per instance, and the in-process page tests make hundreds. Installed packages do not change
    during a test run, so the scan's result is kept for the process."""
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest_scanner, "scan_component_manifests", functools.cache(scan))
        yield


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """The vendored public data (PandaLM, HANNA) under ``tests/fixtures/``."""
    return FIXTURES_DIR


@pytest.fixture(scope="session")
def alignmmbench_metadata() -> Path:
    """AlignMMBench's ``metadata.jsonl`` (CC BY-NC-SA, not vendored), from the environment.

    Skips when the variable is unset; fails when it is set but the file is not there, so that
    CI, which sets it, never skips these tests silently.
    """
    folder = os.environ.get(ALIGNMMBENCH_ENV)
    if not folder:
        pytest.skip(f"${ALIGNMMBENCH_ENV} is not set (the folder with AlignMMBench metadata.jsonl)")
    path = Path(folder) / "metadata.jsonl"
    if not path.is_file():
        pytest.fail(f"${ALIGNMMBENCH_ENV} is {folder}, but {path} does not exist")
    return path


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'critiquelab.db'}"


def _migrated_engine(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """The engine of a freshly migrated database at ``url``, its data folder in ``tmp_path``;
    disposed afterwards. The body of the engine fixtures below."""
    monkeypatch.setenv("CRITIQUELAB_DATA_DIR", str(tmp_path / "data"))
    engine = make_engine(url)
    upgrade_database(engine)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def empty_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated empty SQLite database file, made once per test process, to copy for each test
    (running the migrations for each of hundreds of tests cost more than the tests)."""
    path = tmp_path_factory.mktemp("template") / "empty.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade_database(engine)
    engine.dispose()  # the last connection to close folds the WAL into the file
    assert not path.with_name("empty.db-wal").exists()
    return path


@pytest.fixture
def engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_sqlite_template: Path
) -> Iterator[Engine]:
    """A fresh, migrated SQLite database in a temp folder (data dir beside it): a copy of
    ``empty_sqlite_template`` (``upgrade_database`` then finds it up to date)."""
    path = tmp_path / "critiquelab.db"
    shutil.copyfile(empty_sqlite_template, path)
    yield from _migrated_engine(f"sqlite:///{path}", tmp_path, monkeypatch)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(command: str) -> None:
    if os.geteuid() == 0:
        subprocess.run(["su", "postgres", "-c", command], check=True, capture_output=True)
    else:
        subprocess.run(command, shell=True, check=True, capture_output=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """A throw-away PostgreSQL cluster on a free 127.0.0.1 port; yields its base URL."""
    external = os.environ.get("CRITIQUELAB_TEST_PG_URL")
    if external:
        yield external.rstrip("/")
        return
    bindir = postgres_bindir()
    if bindir is None:
        missing(postgres_missing())
    folder = Path(tempfile.mkdtemp(prefix="critiquelab-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", _free_port()
    try:
        _as_postgres(f"{bindir}/initdb -A trust -U postgres -D {data} > /dev/null")
        _as_postgres(
            f"{bindir}/pg_ctl -D {data} -l {folder}/log -w -o "
            f"'-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200 "
            f"-c fsync=off' start > /dev/null"
        )
    except subprocess.CalledProcessError as error:
        missing(f"could not start PostgreSQL: {error.stderr.decode(errors='replace')[-300:]}")
    yield f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    with contextlib.suppress(subprocess.CalledProcessError):  # already gone is fine
        _as_postgres(f"{bindir}/pg_ctl -D {data} -m immediate stop > /dev/null")
    shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def _pg_database(server: str, template: str | None = None) -> Iterator[str]:
    """A new database on the test server (a copy of ``template`` when given); dropped after."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = server.replace("postgresql+psycopg://", "postgresql://") + "/postgres"
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"{copy}')
    yield f"{server}/{name}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh empty PostgreSQL database on the test server (dropped afterwards)."""
    with _pg_database(pg_server) as url:
        yield url


@pytest.fixture(scope="session")
def pg_template(pg_server: str) -> Iterator[str]:
    """A migrated empty database on the test server, the template of ``pg_migrated_url``."""
    with _pg_database(pg_server) as url:
        engine = make_engine(url)
        upgrade_database(engine)
        engine.dispose()  # CREATE DATABASE ... TEMPLATE needs it without connections
        yield url.rsplit("/", 1)[1]


@pytest.fixture
def pg_migrated_url(pg_server: str, pg_template: str) -> Iterator[str]:
    """A fresh migrated PostgreSQL database: a copy of ``pg_template`` (dropped afterwards)."""
    with _pg_database(pg_server, pg_template) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def any_engine(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Engine]:
    """The same test on a fresh migrated SQLite and a fresh migrated PostgreSQL database."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'critiquelab.db'}"
        shutil.copyfile(
            request.getfixturevalue("empty_sqlite_template"), tmp_path / "critiquelab.db"
        )
    else:
        url = request.getfixturevalue("pg_migrated_url")
    yield from _migrated_engine(url, tmp_path, monkeypatch)


@pytest.fixture
def pg_engine(
    pg_migrated_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Engine]:
    """A fresh migrated PostgreSQL database (for tests that need PostgreSQL's row locks)."""
    yield from _migrated_engine(pg_migrated_url, tmp_path, monkeypatch)


# What makes a test `slow` (left out of the inner loop's `pytest -m "not slow"`; CI runs all):
# a browser, a PostgreSQL server, a served app, a tiny torch model or the built sample project
# among its fixtures, or a parameter that names PostgreSQL or one of those fixtures (the tests that
# fetch it with `request.getfixturevalue`). Tests that start processes of their own or build the
# sample themselves are marked by hand.
SLOW_FIXTURES = frozenset(
    {
        "browser",
        "app_server",
        "sample_app_server",
        "pg_server",
        "tiny_llama",
        "tiny_llava",
        "sample_template",
    }
)


# A rough cost of one slow test by what it starts, to hand out the costliest files first.
_COST = {"browser": 8, "app_server": 4, "sample_app_server": 4, "pg_server": 2, "tiny_llama": 2}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    cost_per_file: Counter[str] = Counter()
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        callspec = getattr(item, "callspec", None)
        # Only the names among the parameters: others may be unhashable (a dict, a list).
        values = callspec.params.values() if callspec is not None else ()
        parameters = {value for value in values if isinstance(value, str)}
        on_postgres = "postgresql" in parameters
        uses |= {value for value in parameters if value in SLOW_FIXTURES}
        marked = any(item.get_closest_marker(name) for name in ("e2e", "postgres"))
        if "browser" in uses:
            item.add_marker(pytest.mark.e2e)  # `pytest -m e2e`: every test that drives Chromium
        if uses & SLOW_FIXTURES or on_postgres or marked:
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("slow"):
            cost = max([_COST.get(name, 1) for name in uses] + [2 if on_postgres else 1])
            cost_per_file[item.nodeid.partition("::")[0]] += cost
    # The costliest files first (each file's tests in their own order): `--dist loadfile` hands
    # files to the workers in this order, and a long file handed out last keeps one core busy
    # while the other waits (longest first is the classic cure for that tail).
    position = {id(item): n for n, item in enumerate(items)}
    items.sort(
        key=lambda item: (-cost_per_file[item.nodeid.partition("::")[0]], position[id(item)])
    )
