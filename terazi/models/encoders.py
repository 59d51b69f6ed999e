"""Loading sentence-transformers models: a bi-encoder (the first stage, bi-encoder rerankers) or a cross-encoder, from
a resolved reference (terazi.models.refs), with the failure said in one line naming the model; and the bi-encoders a
process shares, so that a model serving as the first stage and as a reranker is loaded once."""

from __future__ import annotations

import json
import threading

from terazi.base.outside import shown
from terazi.base.shutdown import stoppable
from terazi.models.refs import ModelError, ModelRef, model_file, pick_device

SHARED_ENCODERS = 2
_encoders: dict[tuple, tuple] = {}
_encoders_lock = threading.Lock()


def load_bi_encoder(
    ref: ModelRef, device: str = "auto", max_length: int | None = None, trust_remote_code: bool = False
):
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(
            ref.location,
            device=pick_device(device),
            revision=ref.revision,
            trust_remote_code=trust_remote_code,
            local_files_only=ref.local,
        )
    except Exception as e:  # the library raises many kinds; say which model failed
        raise ModelError(f"could not load encoder {ref.name!r} from {ref.location}: {shown(e)}") from e
    if max_length:
        model.max_seq_length = max_length
    return stoppable(model)


def torch_dtype(precision: str):
    import torch

    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[precision]


def seq_length(ref: ModelRef, max_length: int | None) -> int | None:
    """The tokens a sentence-transformers model reads: `max_length`, else its configured `max_seq_length` (None when
    it has none), read without loading the model."""
    if max_length:
        return max_length
    path = model_file(ref, "sentence_bert_config.json", required=False)
    return json.loads(path.read_text(encoding="utf-8")).get("max_seq_length") if path else None


def shared_bi_encoder(
    ref: ModelRef, device: str, max_length: int | None, trust_remote_code: bool = False, precision: str = "fp32"
) -> tuple:
    """One bi-encoder per (model, device, tokens, precision) in this process, with the lock it encodes under: the
    first stage's shard tasks and a reranker of the same model load it once, and never run it from two threads."""
    device = pick_device(device)
    key = (ref.location, ref.revision, device, seq_length(ref, max_length), trust_remote_code, precision)
    with _encoders_lock:
        if key not in _encoders:
            if len(_encoders) >= SHARED_ENCODERS:
                _encoders.pop(next(iter(_encoders)))
            model = load_bi_encoder(ref, device, max_length, trust_remote_code)
            if precision != "fp32":
                model.to(torch_dtype(precision))
            _encoders[key] = (model, threading.Lock())
        return _encoders[key]


def load_cross_encoder(
    ref: ModelRef,
    device: str = "auto",
    max_length: int | None = None,
    trust_remote_code: bool = False,
    activation_fn=None,
):
    """A sentence-transformers CrossEncoder in fp32 (the backend casts it to its precision)."""
    from sentence_transformers import CrossEncoder

    dev = pick_device(device)
    try:
        model = CrossEncoder(
            ref.location,
            device=dev,
            max_length=max_length,
            revision=ref.revision,
            trust_remote_code=trust_remote_code,
            local_files_only=ref.local,
            activation_fn=activation_fn,
        )
    except Exception as e:
        raise ModelError(f"could not load cross-encoder {ref.name!r} from {ref.location}: {shown(e)}") from e
    return stoppable(model)
