"""The one boundary every command goes through, run by what the command declares it reads and writes.

`terazi run` promised that its outputs never overlap its inputs; the promise is per command. So every command states,
parameter by parameter, which paths it reads and which it writes (`terazi.base.paths.Place`), in `declares(...)` above
its function, and the declaration is what runs it: before the command's own code (so before anything is written) logging
and `--verbose` are set, every output is checked against every input and every other output
(`terazi.base.paths.disjoint`), and any failure is one `error:` line; a full disk names the declared output whose disk
it is. A declared file output that exists and that terazi did not write is refused unless the call says `--force`
(`terazi.base.paths.foreign`); what the call wrote is recorded after it (`terazi.base.paths.claim`), so the next call
replaces it. Places that only the call's values tell (the files `terazi card --format all` writes, the folders a results
folder's run read) come from the declaration's `more`; a config file's folders are checked once it is read
(`terazi.results.run_folder.check_outputs`, `terazi.leakage.checked.check_inputs`). `tests/test_places.py` proves that
no command can write onto an input.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from terazi.base.paths import Declared, Found, Place, claim, disjoint, foreign, signatures
from terazi.cli.common import OUTPUTS, errors_as_lines, setup


def dataset_path(value: Any) -> str | None:
    """A dataset's folder on this machine (a BEIR folder, hf:/local/folder); None for a hub's, mteb: or ir_datasets:."""
    from terazi.schemas.datasets import DatasetSpec

    return DatasetSpec(path=str(value)).folder


def training_path(value: Any) -> str | None:
    """A training source's file or folder on this machine; None for a hub dataset."""
    from terazi.schemas.leakage import TrainSource

    return TrainSource(path=str(value)).place


def declares(
    reads: tuple[Place, ...] = (),
    writes: tuple[Place, ...] = (),
    more: Callable[[dict[str, Any]], tuple[Found, Found]] | None = None,
) -> Callable:
    """The command, run through the boundary described above; `more(kwargs)` adds (outputs, inputs) the call's values
    imply. The declaration stays on the command as `.declared`."""
    declared = Declared(tuple(reads), tuple(writes))

    def wrap(command: Callable) -> Callable:
        @functools.wraps(command)
        def checked(**kwargs: Any) -> Any:
            setup(bool(kwargs.get("verbose")))
            with errors_as_lines():
                outputs, inputs = declared.places(kwargs)
                extra_out, extra_in = more(kwargs) if more else ([], [])
                disjoint(outputs + extra_out, inputs + extra_in)  # before anything is written
                files = declared.files(kwargs)
                if not kwargs.get("force"):
                    foreign(files)
                before = signatures(files)
            token = OUTPUTS.set(declared.folders(kwargs))
            try:
                with errors_as_lines():
                    return command(**kwargs)
            finally:
                OUTPUTS.reset(token)
                claim(before)

        checked.declared = declared
        return checked

    return wrap
