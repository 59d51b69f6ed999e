"""Bi-encoder run by sentence-transformers on torch: cosine of the query's and the passage's embeddings."""

from __future__ import annotations

import numpy as np

from terazi.models.loading import load_bi_encoder
from terazi.rerank.backends.base import Backend, torch_dtype
from terazi.rerank.pairs import Pair


def cosine(pairs: list[Pair], encode) -> np.ndarray:
    """Each distinct query and passage encoded once (unit vectors), then one dot product per pair."""
    queries = list(dict.fromkeys(p.query for p in pairs))
    docs = list(dict.fromkeys(p.doc for p in pairs))
    qe, de = encode(queries), encode(docs)
    qi = {t: i for i, t in enumerate(queries)}
    di = {t: i for i, t in enumerate(docs)}
    a = qe[[qi[p.query] for p in pairs]]
    b = de[[di[p.doc] for p in pairs]]
    return (a.astype(np.float64) * b.astype(np.float64)).sum(axis=1)


class TorchBiEncoder(Backend):
    kind = "bi-encoder"

    def _rule(self) -> str:
        return "cosine"

    def _load(self):
        model = load_bi_encoder(self.ref, self.device, self.max_length or None, self.spec.trust_remote_code)
        if self.precision != "fp32":
            model.to(torch_dtype(self.precision))
        return model

    def _encode(self, texts: list[str]) -> np.ndarray:
        def run(batch: int) -> np.ndarray:
            out = self.model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_tensor=True)
            return out.float().cpu().numpy()

        return self.backing_off(run)

    def _score(self, pairs: list[Pair]) -> np.ndarray:
        return cosine(pairs, self._encode)
