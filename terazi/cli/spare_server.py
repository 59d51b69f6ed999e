"""The temporary Prefect server's process, started before terazi knows the server's settings.

Most of a temporary server's start-up is its process importing Prefect's server (FastAPI, SQLAlchemy, the API:
seconds of CPU), and that does not depend on anything the run decides. So a run without a Prefect API in its
environment starts this process first, while it is still importing Prefect itself (seconds more) to learn the
settings; the process imports the server on the other core, then waits for one line on its stdin: the environment
to run in (the process's own plus terazi's settings for the temporary server), the port, and the log file its output
goes to. Then it starts Prefect's own app (`prefect.server.api.server:create_app`, as `uvicorn --factory` would),
which reads the database, logging and service settings as it starts. A few of Prefect's settings are read when its
server is imported (its services' intervals, queue sizes, PREFECT_HOME's creation): from the same environment and
profile as the run's, so the same values; a run whose Prefect settings come from its caller's context (a test
harness, `temporary_settings`) starts this process only once it knows them, importing under them. Being killed
before the line (the run learned that a Prefect API is configured after all, or failed first) ends it having
written nothing.

Run as `python -P <this file>`: it imports nothing of terazi, only uvicorn and Prefect, and `-P` keeps both the
working directory and this file's folder off the import path, so no folder of the user's named like a module can
stand in for Prefect's.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import traceback
from pathlib import Path
from typing import IO


class Spare:
    """The parent's handle: `serve()` once with the settings, or `close()` to end it unused."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen([sys.executable, "-P", __file__], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def serve(self, env: dict[str, str], port: int, log: Path, truncate: bool) -> None:
        """Hand the process its settings: from here it is Prefect's server on 127.0.0.1:`port`."""
        stdin: IO[bytes] = self.process.stdin  # type: ignore[assignment]
        try:
            stdin.write(json.dumps({"env": env, "port": port, "log": str(log), "truncate": truncate}).encode() + b"\n")
            stdin.close()
        except OSError:
            pass  # it has exited already: the caller's wait reports its exit code and log

    def close(self) -> None:
        """End it unused: until it has its settings it has written nothing, so it is simply killed."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stdin:
            self.process.stdin.close()


def _main() -> int:
    gc.set_threshold(50_000)  # as terazi.cli.GC_THRESHOLD (not imported: this file imports nothing of terazi)
    failure = None
    try:  # the costly part, done while the run decides (a failure is written to the log once it is known)
        import uvicorn

        import prefect.server.api.server  # noqa: F401
    except BaseException:
        failure = traceback.format_exc()
    line = sys.stdin.readline()
    if not line:
        return 0
    order = json.loads(line)
    with open(order["log"], "wb" if order["truncate"] else "ab") as log:  # its output off the run's terminal
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    if failure:
        sys.stderr.write(failure)
        return 1
    os.environ.clear()
    os.environ.update(order["env"])
    from prefect.context import refresh_global_settings_context

    refresh_global_settings_context()  # Prefect's settings read from the environment just handed over
    uvicorn.run("prefect.server.api.server:create_app", factory=True, host="127.0.0.1", port=order["port"],
                log_level="error", lifespan="on")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
