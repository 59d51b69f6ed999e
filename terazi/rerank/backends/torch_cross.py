"""Cross-encoder run by sentence-transformers on torch: fp32 on CPU, fp16 (or bf16) on CUDA."""

from __future__ import annotations

import numpy as np

from terazi.models.encoders import load_cross_encoder, torch_dtype
from terazi.models.refs import ModelRef, model_config
from terazi.rerank.backends.base import Backend
from terazi.rerank.pairs import Pair

KNOWN = ("Sigmoid", "Identity", "Tanh")


def activation_name(config: dict, trust_remote_code: bool = False) -> str:
    """The activation sentence-transformers applies to a cross-encoder's logits, read from config.json as it does:
    the saved `activation_fn` (a torch.* path, or any path with remote code allowed), else Sigmoid for one label and
    Identity for several."""
    path = (config.get("sentence_transformers") or {}).get("activation_fn") or config.get(
        "sbert_ce_default_activation_function"
    )
    if path and (path.startswith("torch.") or trust_remote_code):
        return path.rsplit(".", 1)[-1] if path.rsplit(".", 1)[-1] in KNOWN else path
    labels = len(config.get("id2label") or {}) or int(config.get("num_labels", 2))
    return "Sigmoid" if labels == 1 else "Identity"


class TorchCrossEncoder(Backend):
    kind = "cross-encoder"

    def __init__(self, spec, ref: ModelRef, cache_dir: str):
        self.activation = activation_name(model_config(ref), spec.trust_remote_code)
        super().__init__(spec, ref, cache_dir)

    def _rule(self) -> str:
        return f"act={self.activation}"

    def _load(self):
        import torch

        act = getattr(torch.nn, self.activation)() if self.activation in KNOWN else None
        model = load_cross_encoder(self.ref, self.device, self.max_length or None, self.spec.trust_remote_code, act)
        if self.precision != "fp32":
            model.to(torch_dtype(self.precision))
        return model

    def _score(self, pairs: list[Pair]) -> np.ndarray:
        texts = [(p.query, p.doc) for p in pairs]

        def run(batch: int) -> np.ndarray:
            out = self.model.predict(texts, batch_size=batch, show_progress_bar=False, convert_to_tensor=True)
            return out.float().cpu().numpy()

        return np.asarray(self.backing_off(run), dtype=np.float64).reshape(len(pairs), -1)[:, -1]
