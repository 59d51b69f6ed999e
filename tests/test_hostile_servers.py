"""A hostile rerank server (issue 44): it echoes the API key everywhere it can put text (the status line's reason
phrase, a header, the body, a 3xx `Location`), for a refusal (4xx), a 5xx retried then failed, a 429 and a redirect,
in both dialects; then through `terazi run` and a served run (the deployment's refusal path, as `terazi serve` runs
it). The key is looked for in the messages, every log record (terazi's, httpx's and httpcore's, DEBUG included), the
results and cache folders, the `.terazi-incomplete` marker and the Prefect database.

The server is the standard library's, on loopback only; it answers at most `MOST` requests (then a bare 410), and
each case asserts how many it was sent.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

import pytest
from typer.testing import CliRunner

from terazi.base.errors import ServiceError
from terazi.rerank.backends import make_scorer
from terazi.rerank.pairs import Pair, PartlyScored
from tests.conftest import make_tiny, tiny_config
from tests.rerank_server import KEY_ENV, http_spec

KEY = "tz-hostile-" + secrets.token_hex(16)
PART = KEY[11:23]  # the key's first random characters: a key cut by a length bound must not show its start either
MOST = 40
# path → (status, extra headers); every answer echoes the Authorization header in its reason phrase, an X-Echo header
# and its body (JSON for some, text for others: both are read), a redirect in its Location too
FAULTS = {
    "refused": (401, {}),
    "failing": (503, {}),
    "limited": (429, {"Retry-After": "0"}),
    "moved": (307, {}),
}


class Hostile:
    """The server: `seen[path]` counts the requests each path got."""

    def __init__(self):
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        hostile = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(min(int(self.headers.get("Content-Length", 0)), 1 << 20))
                name = self.path.strip("/")
                with hostile.lock:
                    hostile.seen[name] = n = hostile.seen.get(name, 0) + 1
                status, headers = FAULTS.get(name, (404, {}))
                if n > MOST or sum(hostile.seen.values()) > 4 * MOST:
                    status, headers = 410, {}
                auth = self.headers.get("Authorization", "")
                body = (
                    json.dumps({"message": f"you sent {auth}", "detail": auth}).encode()
                    if status in (401, 429)
                    else ("y" * 280 + f"{auth}\r\n\x1b[31m{auth}").encode()  # the key across the 300 bound
                )
                self.send_response(status, f"Echo {auth}" if status != 410 else "Gone")
                for k, v in {**headers, "X-Echo": auth, "Content-Length": str(len(body))}.items():
                    self.send_header(k, v)
                if 300 <= status < 400:
                    self.send_header("Location", f"http://127.0.0.1:9/elsewhere?auth={quote(auth)}&raw={auth}")
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile-servers")


@pytest.fixture(scope="module")
def hostile(work):
    os.environ[KEY_ENV] = os.environ["TERAZI_API_KEY"] = KEY
    server = Hostile()
    yield server
    server.stop()
    os.environ.pop(KEY_ENV, None)
    os.environ.pop("TERAZI_API_KEY", None)


@pytest.fixture(scope="module")
def log_file(work):
    """Every record of terazi and of httpx and httpcore (DEBUG: they see the status lines and headers) into one file."""
    handler = logging.FileHandler(work / "logs.txt", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    names = ("terazi", "httpx", "httpcore")
    saved = {n: (logging.getLogger(n).level, logging.getLogger(n).propagate) for n in names}
    for name in names:
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.DEBUG)
        logging.getLogger(name).propagate = name == "terazi"
    yield work / "logs.txt"
    for name, (level, propagate) in saved.items():
        logging.getLogger(name).removeHandler(handler)
        logging.getLogger(name).setLevel(level)
        logging.getLogger(name).propagate = propagate
    handler.close()


@pytest.mark.parametrize("dialect", ["cohere", "tei"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_nothing_the_server_says_shows_the_key(hostile, work, log_file, caplog, fault, dialect):
    pairs = [Pair("çay", f"d{i}", f"belge {i}") for i in range(2)]
    spec = http_spec(f"{hostile.url}/{fault}", name=f"h-{dialect}", dialect=dialect, concurrency=1, retries=1)
    before = hostile.seen.get(fault, 0)
    with caplog.at_level(logging.DEBUG, logger="terazi"), pytest.raises(PartlyScored) as caught:
        make_scorer(spec, None, "x", True, str(work / "cache")).score(pairs)
    error = caught.value.error
    message = str(error)
    assert isinstance(error, ServiceError) and "***" in message and len(message) < 1000, message
    assert "\n" not in message and "\x1b" not in message
    tries = hostile.seen[fault] - before
    if fault in ("failing", "limited"):
        assert tries == 2 and "gave up after 2 tries" in message  # tried again once, then failed
        warned = [r.getMessage() for r in caplog.records if "trying again" in r.getMessage()]
        assert len(warned) == 1 and "Echo Bearer ***" in warned[0]
    else:
        assert tries == 1 and "trying again" not in caplog.text
    if fault == "moved":
        assert "a redirect, not followed" in message
    (work / f"message-{fault}-{dialect}.txt").write_text(message + "\n" + caplog.text, encoding="utf-8")
    assert PART not in message + caplog.text


def _run_config(work: Path, name: str, url: str) -> dict:
    served = {"name": "served", "kind": "http", "url": url, "model": "m", "api_key_env": KEY_ENV, "retries": 1}
    first = [{"name": "bm25", "kind": "bm25"}]
    data = make_tiny(work / f"tiny-{name}")
    return tiny_config(work, data, rerankers=[served], first_stages=first, conditions=["clean"], run_name=name)


def test_a_run_and_a_served_run_keep_the_key_out_of_every_file_and_the_prefect_database(
    prefect_server, hostile, work, log_file, monkeypatch
):
    """`terazi run` refused by the server (4xx), and a served run whose server fails for good (5xx, retried): one
    blotted line each; then the key is looked for in everything written."""
    from prefect.settings import PREFECT_SERVER_DATABASE_CONNECTION_URL

    from terazi.cli import app
    from terazi.flows.evaluate import evaluate
    from terazi.schemas import EvalConfig

    config = work / "run.json"  # a BM25 first stage: no model to load
    config.write_text(json.dumps(_run_config(work, "cli", f"{hostile.url}/refused")), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "--config", str(config)])
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert "answered 401 Echo Bearer ***: you sent Bearer ***" in result.output.replace("\n", ""), result.output
    (work / "cli-output.txt").write_text(result.output, encoding="utf-8")

    from terazi.config.policy import ENV, ServicePolicy

    served = ServicePolicy(
        data_roots=[str(work)],
        results_root=str(work / "results"),
        cache_root=str(work / "cache"),
        endpoints=[f"{hostile.url}/failing {KEY_ENV}"],
    )
    monkeypatch.setenv(ENV, served.model_dump_json())  # as `terazi serve` passes it to its runs
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-4000-8000-000000000044")
    config = EvalConfig.model_validate(_run_config(work, "served", f"{hostile.url}/failing"))
    state = evaluate(config, return_state=True)
    assert state.is_failed() and "gave up after 2 tries" in state.message and "***" in state.message
    marker = json.loads((work / "results" / "served" / ".terazi-incomplete").read_text(encoding="utf-8"))
    assert "Echo Bearer ***" in marker["reason"]

    url = PREFECT_SERVER_DATABASE_CONNECTION_URL.value()
    db = Path(str(getattr(url, "get_secret_value", lambda: url)()).split("///")[-1])
    home = Path(os.environ["PREFECT_HOME"])
    looked = [p for root in (work, home, db.parent) for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".db" for p in looked) and any(p.name == ".terazi-incomplete" for p in looked)
    assert "HTTP Request: POST" in log_file.read_text(encoding="utf-8")  # httpx's records were captured
    time.sleep(2)  # the Prefect server writes logs and events in batches
    holding = [str(p) for p in looked if PART.encode() in p.read_bytes()]
    assert holding == []
