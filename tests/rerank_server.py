"""A real rerank server for the HTTP reranker's tests, and a proxy that puts a service's faults between it and terazi.

`Infinity` runs the registry package `infinity-emb` (pinned in tests/servers/infinity.txt, installed by
scripts/rerank-server into a virtual environment of its own) serving a local cross-encoder folder offline, with an
API key; `requests()` reads how many rerank requests it answered from its Prometheus `/metrics`. `FaultProxy`
forwards to it, except for the faults queued with `inject`: a status with its headers and body, a pause longer than
the client waits, a connection dropped without an answer, an answer garbled after the server gave it. It records
every request it saw (time, fault, Authorization header) and the most it had in flight at once.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT_S = 900
KEY_ENV = "TERAZI_TEST_RERANK_KEY"


def http_spec(url: str, **kw):
    """A `kind: http` row asking `url` for the tiny test cross-encoder, 4 documents a request, 2 requests at once."""
    from terazi.schemas import HttpRerankerSpec

    return HttpRerankerSpec(
        **{
            "name": "served",
            "kind": "http",
            "url": url,
            "model": "tiny-ce",
            "api_key_env": KEY_ENV,
            "batch_size": 4,
            "concurrency": 2,
            "timeout": 10,
            **kw,
        }
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def infinity_executable() -> str:
    """The server's executable, built once per machine (scripts/rerank-server); skips the test when it cannot be."""
    try:
        done = subprocess.run(
            ["bash", str(ROOT / "scripts" / "rerank-server")], capture_output=True, text=True, timeout=BUILD_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"the test rerank server (infinity-emb) was not installed within {BUILD_TIMEOUT_S} s")
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["scripts/rerank-server failed"])[-1]
        pytest.skip(f"no real rerank server to test against: {reason}")
    return done.stdout.strip().splitlines()[-1]


class Infinity:
    """`infinity_emb v2` on a free local port, serving `model_dir` as `name`, requiring `key`."""

    def __init__(self, executable: str, model_dir: str, name: str, key: str, log: Path):
        self.port, self.key = free_port(), key
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "DO_NOT_TRACK": "1", "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
        self.log = log.open("wb")
        self.proc = subprocess.Popen(
            [
                executable,
                "v2",
                "--model-id",
                model_dir,
                "--served-model-name",
                name,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--engine",
                "torch",
                "--device",
                "cpu",
                "--dtype",
                "float32",
                "--no-model-warmup",
                "--api-key",
                key,
                "--log-level",
                "warning",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"infinity_emb exited with {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"infinity_emb did not answer within 180 s: {log.read_text()[-2000:]}")

    def requests(self) -> int:
        """Rerank requests the server answered so far (any status), as its Prometheus counter says."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
        found = re.findall(
            r'^http_requests_total\{handler="/rerank",method="POST",status="\w+"\} ([0-9.e+]+)$', text, re.M
        )
        return int(sum(float(v) for v in found))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


class FaultProxy:
    """A local HTTP proxy to `upstream` that answers the next requests with the faults queued by `inject`:
    `("status", code, headers, body)` (`body` may be a function of the request's headers), `("pause", seconds)`
    (then drops the connection), `("drop",)`, `("garble", how)` (forwards, then spoils the answer: `how(answer) ->
    text`), `("pass",)` (forwards). `pause_each`: seconds every forwarded request waits first (to overlap them)."""

    def __init__(self, upstream: str, pause_each: float = 0.0):
        self.upstream, self.pause_each = upstream, pause_each
        self.faults: list[tuple] = []
        self.seen: list[dict] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                sent = json.loads(body)
                with proxy.lock:
                    fault = proxy.faults.pop(0) if proxy.faults else None
                    proxy.seen.append(
                        {
                            "t": time.monotonic(),
                            "fault": fault and fault[0],
                            "documents": len(sent.get("documents") or sent.get("texts") or []),
                            "body": body,
                            "authorization": self.headers.get("Authorization"),
                        }
                    )
                    proxy.in_flight += 1
                    proxy.most_in_flight = max(proxy.most_in_flight, proxy.in_flight)
                try:
                    self.answer(fault, body)
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1

            def answer(self, fault, body: bytes):
                if fault and fault[0] == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault and fault[0] == "pause":
                    time.sleep(fault[1])
                    self.close_connection = True
                    return
                if fault and fault[0] == "status":
                    _, code, headers, payload = fault
                    if callable(payload):
                        payload = payload(self.headers)
                    return self.send(code, json.dumps(payload).encode(), headers)
                time.sleep(proxy.pause_each)
                r = httpx.post(
                    proxy.upstream + self.path,
                    content=body,
                    timeout=60,
                    headers={
                        "Content-Type": "application/json",
                        **({"Authorization": a} if (a := self.headers.get("Authorization")) else {}),
                    },
                )
                content = r.content
                if fault and fault[0] == "garble":
                    content = fault[1](r.json()).encode()
                self.send(r.status_code, content, {})

            def send(self, code: int, content: bytes, headers: dict):
                self.send_response(code)
                for k, v in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a dropped connection is the point, not news

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def inject(self, *faults: tuple) -> None:
        with self.lock:
            self.faults.extend(faults)

    def reset(self) -> None:
        with self.lock:
            self.faults.clear()
            self.seen.clear()
            self.most_in_flight = 0

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
