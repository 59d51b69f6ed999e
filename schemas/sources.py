"""The names of datasets that are not plain BEIR folders: `hf:ORG/NAME[@REVISION][#SUBSET]`, `hf:/local/folder`,
`mteb:TASK[#SUBSET]`, `ir_datasets:ID` (terazi.data.sources reads them into BEIR folders).

The grammar is part of the contracts because a dataset path is a field users fill in: a misspelt name is refused when
the configuration is read, and the dataset's default label is known before anything is loaded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from terazi.base.errors import DatasetError
from terazi.base.paths import slugify

SCHEMES = ("hf", "mteb", "ir_datasets")
_HF = re.compile(r"^(?P<name>[^@#]+?)(?:@(?P<revision>[^#]+))?(?:#(?P<subset>.+))?$")
_LOCAL = ("/", ".", "~")  # hf: names starting so are folders on this machine


@dataclass(frozen=True)
class Source:
    """A parsed dataset name."""

    text: str
    scheme: str
    name: str
    revision: str | None = None
    subset: str | None = None

    @property
    def local(self) -> bool:
        return self.scheme == "hf" and self.name.startswith(_LOCAL)

    @property
    def label(self) -> str:
        """The dataset's default name in the results."""
        base = Path(self.name).expanduser().resolve().name if self.local else self.name.rstrip("/").split("/")[-1]
        if self.scheme == "ir_datasets":
            base = self.name.replace("/", "-")
        return slugify(base + (f"-{self.subset}" if self.subset else ""))


def parse(path: str) -> Source | None:
    """The named source a dataset path stands for, or None for a plain BEIR folder."""
    scheme, sep, rest = path.partition(":")
    if not sep or scheme not in SCHEMES:
        return None
    m = _HF.match(rest) if scheme != "ir_datasets" else None
    if scheme == "ir_datasets":
        if not rest:
            raise DatasetError(path, None, "expected ir_datasets:ID, e.g. ir_datasets:beir/scifact/test")
        return Source(path, scheme, rest)
    if not m or (scheme == "hf" and not rest.startswith(_LOCAL) and rest.count("/") != 1):
        example = "hf:ORG/NAME[@REVISION][#SUBSET] or hf:/path/to/folder" if scheme == "hf" else "mteb:TASK[#SUBSET]"
        raise DatasetError(path, None, f"cannot read the dataset name: expected {example}")
    if scheme == "mteb" and m["revision"]:
        raise DatasetError(path, None, "an MTEB task has its revision pinned by MTEB: write mteb:TASK[#SUBSET]")
    return Source(path, scheme, m["name"], m["revision"], m["subset"])
