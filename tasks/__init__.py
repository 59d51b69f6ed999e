"""Prefect tasks: each module holds one `task(core_function, …)` line per core function of its stage, nothing else
(docs/architecture.md says what a task may and may not do).

Tasks exchange the small manifests of `terazi.schemas.manifests`; heavy data stays on disk, named by
fingerprints, so retries and re-runs never pickle arrays. terazi's log lines reach the Prefect
run they belong to (`terazi.base.logs`), wherever the task runs.
"""

from terazi.base.errors import TeraziError
from terazi.base.logs import send_to_prefect
from terazi.base.paths import is_disk_full

send_to_prefect()


def transient(task, task_run, state) -> bool:
    """Retry condition: retry I/O and model hiccups, never terazi's own (deterministic) errors or a full disk."""
    exc = state.data
    return not (isinstance(exc, TeraziError) or is_disk_full(exc))
