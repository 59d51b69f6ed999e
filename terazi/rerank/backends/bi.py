"""What both bi-encoder backends share: the cosine of a query's and a passage's vectors, each text encoded once.

A chunk's pairs are held before their blocks are scored (`hold`): each distinct query and passage among them gets its
vector once, from the cache folder's vector stores (`terazi.models.vectors`: the first stage's, when this is its model,
length, precision and device, or an earlier chunk's) or else encoded then, all at once, and kept there for the next
chunk or run. Blocks are then dot products. Outside a hold (the latency probe) a pair's texts are encoded as it is
scored. A vector's last bits depend on the batch it was padded into, so a score equals another encoding's to the
model's float tolerance.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from terazi.base import fingerprint
from terazi.models.encoders import seq_length
from terazi.models.vectors import VectorStore, store_key, vector_identity
from terazi.rerank.backends.base import Backend
from terazi.rerank.pairs import Corpus, Pair
from terazi.store.layout import CacheLayout


def cosine(pairs: list[Pair], queries: Callable[[list[str]], np.ndarray], docs: Callable[[list[str]], np.ndarray]):
    """Each distinct query and passage looked up once (unit vectors), then one dot product per pair."""
    q_texts = list(dict.fromkeys(p.query for p in pairs))
    d_texts = list(dict.fromkeys(p.doc for p in pairs))
    qe, de = queries(q_texts), docs(d_texts)
    qi = {t: i for i, t in enumerate(q_texts)}
    di = {t: i for i, t in enumerate(d_texts)}
    a = qe[[qi[p.query] for p in pairs]]
    b = de[[di[p.doc] for p in pairs]]
    return (a.astype(np.float64) * b.astype(np.float64)).sum(axis=1)


class BiEncoder(Backend):
    """A bi-encoder backend: its `_encode(texts)` gives unit float32 vectors; the rest is here."""

    kind = "bi-encoder"

    @classmethod
    def create(
        cls, spec, *, ref, cache_dir: str, corpus: Corpus | None = None, corpus_fingerprint: str = "", **_
    ) -> BiEncoder:
        """A model row's constructor, with the corpus its documents' vectors are numbered by."""
        scorer = cls(spec, ref, cache_dir)
        scorer.corpus, scorer.corpus_fingerprint = corpus, corpus_fingerprint
        return scorer

    def __init__(self, spec, ref, cache_dir: str):
        super().__init__(spec, ref, cache_dir)
        self.corpus: Corpus | None = None
        self.corpus_fingerprint = ""
        self._rows: dict[str, int] | None = None
        self._held: dict[str, np.ndarray] = {}

    def _encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit float32 vectors of `texts`, the model loaded first."""
        self.load()
        return self._encode(texts)

    def vector_identity(self) -> str:
        """What decides this scorer's vectors (the first stage's, when it is the same model, length and device)."""
        return vector_identity(
            self.ref,
            self._backend_part(),
            seq_length(self.ref, self.max_length or None),
            "",
            self.precision,
            self.device,
        )

    def _stores(self) -> tuple[VectorStore, VectorStore | None]:
        """(queries' store, documents' store: None without a corpus to number them by)."""
        ident, root = self.vector_identity(), CacheLayout(self.cache_dir).part("embeddings")
        docs = VectorStore(root / store_key(ident, self.corpus_fingerprint)) if self.corpus_fingerprint else None
        return VectorStore(root / store_key(ident)), docs

    def _doc_rows(self, doc_ids: list[str]) -> np.ndarray:
        """The store's keys of the documents: the first corpus row of each one's text, so a passage and its copies
        share one vector in every chunk (`CorpusTable.first_rows`; the first stage's vector of that text)."""
        if self._rows is None:
            self._rows = dict(zip(self.corpus.ids().to_list(), self.corpus.first_rows().tolist()))
        return np.fromiter((self._rows[d] for d in doc_ids), dtype=np.int64, count=len(doc_ids))

    def hold(self, pairs: list[Pair], timed: Callable[[Callable, list[str]], np.ndarray]) -> None:
        """Vectors of every distinct text of `pairs`, found or else encoded at once (through `timed`, which times
        the encoding as scoring) and kept in the store; held until `release()`."""
        q_store, d_store = self._stores()
        queries = list(dict.fromkeys(p.query for p in pairs))
        docs: dict[str, str] = {}
        for p in pairs:
            docs.setdefault(p.doc, p.doc_id)
        d_keys = self._doc_rows(list(docs.values())) if d_store else None
        self._held = {}
        for texts, keys, store in ((queries, fingerprint.text_keys(queries), q_store), (list(docs), d_keys, d_store)):
            found = np.zeros(len(texts), dtype=bool)
            if store is not None:
                found, vectors = store.get(keys)
                if vectors is not None:
                    self._held.update(zip((t for t, f in zip(texts, found) if f), vectors))
            missing = [t for t, f in zip(texts, found) if not f]
            if missing:
                vectors = np.asarray(timed(self.encode, missing), dtype=np.float32)
                if store is not None:
                    store.put(keys[~found], vectors)
                self._held.update(zip(missing, vectors))

    def release(self) -> None:
        self._held = {}

    def _vectors(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._held]
        fresh = dict(zip(missing, self.encode(missing))) if missing else {}
        return np.stack([self._held[t] if t in self._held else fresh[t] for t in texts])

    def score(self, pairs: list[Pair]) -> np.ndarray:
        """Scores of `pairs`; the model is loaded only when a text has no vector held."""
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        return cosine(pairs, self._vectors, self._vectors)
