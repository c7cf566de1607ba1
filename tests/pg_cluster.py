"""A throw-away PostgreSQL cluster for the tests and benchmarks: its own data folder in a temp
directory, on a free 127.0.0.1 port, removed afterwards.

    with throwaway_postgres() as url:   # postgresql+psycopg://postgres@127.0.0.1:PORT/postgres
        ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.system_binaries import postgres_bindir, postgres_missing

MAX_CONNECTIONS = 300
"""Room for 4 app processes with full pools (10 + 40 overflow each, ``data.storage.engine``) under
the no-think-time stress run of ``bench/load_test.py``, plus the checker."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _as_postgres(command: str) -> None:
    argv = ["su", "postgres", "-c", command] if os.geteuid() == 0 else ["sh", "-c", command]
    subprocess.run(argv, check=True, capture_output=True)


class PostgresCluster:
    """A PostgreSQL cluster of its own in a temp folder, on a free 127.0.0.1 port."""

    def __init__(self) -> None:
        bindir = postgres_bindir()
        if bindir is None:
            raise RuntimeError(postgres_missing())
        self.bin = bindir
        self.folder = Path(tempfile.mkdtemp(prefix="critiquelab-pg-"))
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self.data, self.port = self.folder / "data", free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        _as_postgres(f"{self.bin}/initdb -A trust -U postgres -D {self.data} > /dev/null")

    def start(self) -> None:
        _as_postgres(
            f"{self.bin}/pg_ctl -D {self.data} -l {self.folder}/log -w -o '-p {self.port} "
            f"-k {self.folder} -c listen_addresses=127.0.0.1 "
            f"-c max_connections={MAX_CONNECTIONS}' start > /dev/null"
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast``: end sessions cleanly; ``immediate``: like a crash)."""
        _as_postgres(f"{self.bin}/pg_ctl -D {self.data} -m {mode} -w stop > /dev/null")

    def remove(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):
            self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A started :class:`PostgresCluster`, removed afterwards; yields its URL."""
    cluster = PostgresCluster()
    try:
        cluster.start()
        yield cluster.url
    finally:
        cluster.remove()
