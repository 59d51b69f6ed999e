"""Bi-encoder run by sentence-transformers on torch: cosine of the query's and the passage's embeddings.

The model is the process's shared one (`terazi.models.encoders.shared_bi_encoder`): a reranker of the first stage's
own model, length and precision uses the model the first stage loaded."""

from __future__ import annotations

import numpy as np

from terazi.models.encoders import shared_bi_encoder
from terazi.rerank.backends.bi import BiEncoder


class TorchBiEncoder(BiEncoder):
    def _rule(self) -> str:
        return "cosine"

    def _load(self):
        model, self._lock = shared_bi_encoder(
            self.ref, self.device, self.max_length or None, self.spec.trust_remote_code, self.precision
        )
        return model

    def _encode(self, texts: list[str]) -> np.ndarray:
        def run(batch: int) -> np.ndarray:
            with self._lock:
                out = self.model.encode(texts, batch_size=batch, normalize_embeddings=True, convert_to_tensor=True)
            return out.float().cpu().numpy()

        return self.backing_off(run)
