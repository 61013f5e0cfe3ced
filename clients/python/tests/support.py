"""The server the tests talk to, and the owner CLI that makes their workspaces and keys.

- ``BASE_URL`` set: that server is used; the CLI (``WORKSPACE_API_CLI``, default
  ``../../bin/workspace-api`` from clients/python) runs with this process's environment, so give it
  the server's ``DATA_DIR`` (embedded store) or ``DATABASE_URL``.
- ``BASE_URL`` unset: ``node <cli> serve`` is started once for the whole run on a free port of
  127.0.0.1 with a fresh ``DATA_DIR``, ``DEMO_ON_FIRST_START=false``, ``LOG_LEVEL=warn`` and no
  ``DATABASE_URL`` (embedded store); it is stopped, and its directory removed, when the run ends.
"""

from __future__ import annotations

import atexit
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

CLIENT_DIR = pathlib.Path(__file__).resolve().parent.parent
REPO_DIR = CLIENT_DIR.parent.parent

ALL_SCOPES = [
    "workspace:read",
    "contacts:read",
    "contacts:write",
    "appointments:read",
    "catalog:read",
    "conversations:read",
    "messages:read",
    "automations:read",
    "events:read",
]


def _cli_path() -> pathlib.Path:
    configured = os.environ.get("WORKSPACE_API_CLI")
    if configured:
        path = pathlib.Path(configured)
        return path if path.is_absolute() else (CLIENT_DIR / path).resolve()
    return (CLIENT_DIR / "../../bin/workspace-api").resolve()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Key:
    id: str
    key: str
    workspace_id: str
    scopes: List[str]


class Server:
    """One server for the whole test run (started on first use)."""

    _instance: Optional["Server"] = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.cli = _cli_path()
        self.process: Optional["subprocess.Popen[bytes]"] = None
        self.data_dir: Optional[str] = None
        self.env = dict(os.environ)
        external = os.environ.get("BASE_URL")
        if external:
            self.base_url = external.rstrip("/")
        else:
            self._start()
        self._wait_healthy()

    @classmethod
    def get(cls) -> "Server":
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
                atexit.register(cls._instance.stop)
            return cls._instance

    def _start(self) -> None:
        port = _free_port()
        self.data_dir = tempfile.mkdtemp(prefix="py-client-test-")
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        env.update(
            PORT=str(port),
            HOST="127.0.0.1",
            DATA_DIR=self.data_dir,
            DEMO_ON_FIRST_START="false",
            LOG_LEVEL="warn",
        )
        self.env = env
        self.base_url = f"http://127.0.0.1:{port}"
        self._log = open(os.path.join(self.data_dir, "server.log"), "wb")
        self.process = subprocess.Popen(
            ["node", str(self.cli), "serve"], env=env, stdout=self._log, stderr=subprocess.STDOUT, cwd=str(REPO_DIR)
        )

    def _wait_healthy(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.base_url}/healthz did not answer within {timeout} s\n{self.log_tail()}")
            time.sleep(0.2)

    def log_tail(self) -> str:
        if not self.data_dir:
            return ""
        path = os.path.join(self.data_dir, "server.log")
        try:
            return pathlib.Path(path).read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None:
            self._log.close()
        self.process = None
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir = None

    # ------------------------------------------------------------------------------- owner CLI

    def run_cli(self, *args: str) -> Any:
        """Runs an owner command with ``--json`` and returns its output."""
        command = ["node", str(self.cli), *args, "--json"]
        done = subprocess.run(command, env=self.env, cwd=str(REPO_DIR), capture_output=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.returncode}): {done.stderr.decode(errors='replace')}"
            )
        return json.loads(done.stdout.decode())

    def create_workspace(self, name: Optional[str] = None) -> str:
        workspace = self.run_cli("workspaces", "create", "--name", name or f"py-client {uuid.uuid4().hex[:8]}")
        return str(workspace["id"])

    def create_key(
        self, workspace_id: str, scopes: List[str], *, name: str = "py-client test", rate_limit: Optional[str] = None
    ) -> Key:
        args = ["keys", "create", "--workspace", workspace_id, "--scopes", ",".join(scopes), "--name", name]
        if rate_limit is not None:
            args += ["--rate-limit", rate_limit]
        created = self.run_cli(*args)
        return Key(id=str(created["id"]), key=str(created["key"]), workspace_id=workspace_id, scopes=scopes)

    def seed(self, workspace_id: str, **amounts: int) -> Dict[str, Any]:
        args = ["seed", "--workspace", workspace_id]
        for name, amount in amounts.items():
            args += [f"--{name.replace('_', '-')}", str(amount)]
        result: Dict[str, Any] = self.run_cli(*args)
        return result

    def delete_contact(self, contact_id: str) -> None:
        self.run_cli("contacts", "delete", contact_id)
