"""The queries an evaluation's `leakage` leaves out: read from a leakage check's output folder (`terazi leakage --out`,
named by terazi.schemas.layout LeakageLayout).

Each dataset of the run is found in the folder's summary.json by its name; its `queries.txt` lists the contaminated
queries (n-gram hits and repeats) and, with `leakage_by: relevant`, `relevant_hit.txt` adds the judged queries whose
relevant passage is hit. Where the run read the dataset itself (a corpus fingerprint), the check must have read the
same corpus. Every problem is one line naming the folder or file: a run fails here, in its preflight, not after its
reranking.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from terazi.base.errors import ConfigError, DatasetError, utf8_error
from terazi.schemas.layout import LeakageLayout


def _ids(path: Path) -> frozenset[str]:
    if not path.is_file():
        raise DatasetError(path, None, "not found: the leakage output folder is incomplete; run `terazi leakage` again")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise utf8_error(path, data, e) from None
    return frozenset(x.strip() for x in text.splitlines() if x.strip())


def _summary(layout: LeakageLayout) -> list[dict]:
    path = layout.summary_json
    if not layout.root.is_dir():
        raise ConfigError(f"leakage: {layout.root} is not a folder; give the output folder of `terazi leakage --out`")
    if not path.is_file():
        raise DatasetError(path, None, "not found: leakage names the output folder of `terazi leakage --out`")
    try:
        body = json.loads(path.read_bytes().decode("utf-8"))
        datasets = body["datasets"]
        if not all(isinstance(d["name"], str) and isinstance(d["folder"], str) for d in datasets):
            raise TypeError
    except (ValueError, KeyError, TypeError) as e:
        raise DatasetError(
            path, None, f"not a leakage summary ({type(e).__name__}); run `terazi leakage` again"
        ) from None
    return datasets


def read_leaked_queries(
    folder: str, by: str, names: Sequence[str], corpora: Mapping[str, str] | None = None
) -> dict[str, frozenset[str]]:
    """Dataset name → the query ids to leave out (`by`: queries | relevant), for each of `names`; `corpora`: the
    corpus fingerprints the run read (name → fingerprint; an empty one is not compared)."""
    layout = LeakageLayout(Path(folder).expanduser())
    checked = {d["name"]: d for d in _summary(layout)}
    out = {}
    for name in names:
        d = checked.get(name)
        if d is None:
            raise ConfigError(
                f"leakage: the leakage check in {layout.root} has no dataset {name!r} (it checked: "
                f"{', '.join(checked) or 'none'}); check it under the same name"
            )
        want, have = (corpora or {}).get(name, ""), d.get("corpus_fingerprint", "")
        if want and have and want != have:
            raise DatasetError(
                layout.summary_json,
                None,
                f"dataset {name!r} was checked with another corpus "
                f"(fingerprint {have}, this run's {want}): run "
                "`terazi leakage` again on the dataset evaluated",
            )
        ids = _ids(layout.queries(d["folder"]))
        out[name] = ids | _ids(layout.relevant_hit(d["folder"])) if by == "relevant" else ids
    return out
