"""Loading sentence-transformers models: a bi-encoder (the first stage, bi-encoder rerankers) or a cross-encoder, from
a resolved reference (terazi.models.refs), with the failure said in one line naming the model."""

from __future__ import annotations

from terazi.models.refs import ModelError, ModelRef, pick_device
from terazi.shutdown import stoppable


def load_bi_encoder(ref: ModelRef, device: str = "auto", max_length: int | None = None, trust_remote_code: bool = False):
    from sentence_transformers import SentenceTransformer

    try:
        model = SentenceTransformer(ref.location, device=pick_device(device), revision=ref.revision,
                                    trust_remote_code=trust_remote_code, local_files_only=ref.local)
    except Exception as e:  # the library raises many kinds; say which model failed
        raise ModelError(f"could not load encoder {ref.name!r} from {ref.location}: {e}") from e
    if max_length:
        model.max_seq_length = max_length
    return stoppable(model)


def load_cross_encoder(ref: ModelRef, device: str = "auto", max_length: int | None = None, trust_remote_code: bool = False,
                       activation_fn=None):
    """A sentence-transformers CrossEncoder in fp32 (the backend casts it to its precision)."""
    from sentence_transformers import CrossEncoder

    dev = pick_device(device)
    try:
        model = CrossEncoder(ref.location, device=dev, max_length=max_length, revision=ref.revision,
                             trust_remote_code=trust_remote_code, local_files_only=ref.local, activation_fn=activation_fn)
    except Exception as e:
        raise ModelError(f"could not load cross-encoder {ref.name!r} from {ref.location}: {e}") from e
    return stoppable(model)
