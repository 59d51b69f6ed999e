"""A score store that workers on several machines share: parquet files under a folder or any fsspec URL.

Layout under the root: `models/<id>.json` (the identity and max length behind a model id) and
`scores/<id>/part-<uuid>.parquet` (columns q, d, score). Parts are immutable and each appears whole: it is
written under `tmp/` and then renamed (on object stores a single PUT, which is atomic too), so a killed
worker never leaves half a part. A lookup reads the store's index, i.e. the list of a model's parts, and
the parts themselves (key columns and scores only); `terazi cache merge` folds a store into a local cache,
and `SharedStore.compact` folds many parts into one.
"""

from __future__ import annotations

import json
import uuid

import polars as pl

from terazi.base.errors import CacheError
from terazi.rerank.store.keys import SCORE_SCHEMA, ModelKey, empty_scores


def model_dir(model_id: int) -> str:
    return f"{model_id & 0xFFFFFFFFFFFFFFFF:016x}"


class SharedStore:
    def __init__(self, url: str):
        import fsspec

        self.where = url
        self.fs, self.root = fsspec.core.url_to_fs(url)
        self.root = self.root.rstrip("/")

    def _parts(self, model_id: int) -> list[str]:
        return sorted(self.fs.glob(f"{self.root}/scores/{model_dir(model_id)}/part-*.parquet"))

    def _read(self, path: str) -> pl.DataFrame:
        try:
            with self.fs.open(path, "rb") as f:
                return pl.read_parquet(f).select(list(SCORE_SCHEMA)).cast(SCORE_SCHEMA)
        except FileNotFoundError:  # compacted away since it was listed
            return empty_scores()
        except (pl.exceptions.PolarsError, OSError) as e:
            raise CacheError(
                f"score store part {self.where}: {path} is unreadable ({e}); delete it (its pairs are scored again)"
            ) from None

    def rows(self, model_id: int) -> pl.DataFrame:
        parts = [self._read(p) for p in self._parts(model_id)]
        return pl.concat(parts).unique(["q", "d"], keep="first", maintain_order=True) if parts else empty_scores()

    def get_many(self, model: ModelKey, keys: pl.DataFrame) -> pl.DataFrame:
        if not keys.height:
            return empty_scores()
        return self.rows(model.id).join(keys.select("q", "d"), on=["q", "d"], how="semi")

    def _put(self, data: bytes | pl.DataFrame, final: str) -> None:
        """One object written whole: under `tmp/` first, then moved (on an object store, a single PUT). An fsspec
        path, not a local file: the cache folder's `write_atomic` cannot reach it."""
        tmp = f"{self.root}/tmp/{uuid.uuid4().hex}"
        self.fs.makedirs(f"{self.root}/tmp", exist_ok=True)
        self.fs.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
        with self.fs.open(tmp, "wb") as f:
            if isinstance(data, bytes):
                f.write(data)
            else:
                data.write_parquet(f, compression="zstd", statistics=True)
        self.fs.mv(tmp, final)

    def put_many(self, model: ModelKey, scores: pl.DataFrame) -> int:
        if not scores.height:
            return 0
        name = f"{self.root}/models/{model_dir(model.id)}.json"
        if not self.fs.exists(name):
            self._put(
                json.dumps({"id": model.id, "identity": model.identity, "max_length": model.max_length}).encode(), name
            )
        self.put_model_rows(model.id, scores)
        return scores.height

    def put_model_rows(self, model_id: int, scores: pl.DataFrame) -> None:
        part = f"{self.root}/scores/{model_dir(model_id)}/part-{uuid.uuid4().hex}.parquet"
        self._put(scores.select(list(SCORE_SCHEMA)).cast(SCORE_SCHEMA), part)

    def count(self, model: ModelKey | None = None) -> int:
        ids = [model.id] if model else [m for m, *_ in self.models()]
        return sum(self.rows(m).height for m in ids)

    def models(self) -> list[tuple[int, str, int, int]]:
        """(id, identity, max_length, parts) of every model in the store."""
        out = []
        for folder in self.fs.glob(f"{self.root}/scores/*"):
            name = folder.rstrip("/").rsplit("/", 1)[-1]
            model_id = int.from_bytes(int(name, 16).to_bytes(8, "big"), "big", signed=True)
            try:
                with self.fs.open(f"{self.root}/models/{name}.json") as f:
                    meta = json.load(f)
            except FileNotFoundError:
                meta = {"identity": "(unknown)", "max_length": 0}
            out.append((model_id, meta["identity"], meta["max_length"], len(self._parts(model_id))))
        return out

    def compact(self, model_id: int) -> int:
        """Fold a model's parts into one (readers may see both for a moment; duplicates are ignored)."""
        parts = self._parts(model_id)
        if len(parts) < 2:
            return len(parts)
        self.put_model_rows(model_id, self.rows(model_id))
        self.fs.rm(parts)
        return len(parts)
