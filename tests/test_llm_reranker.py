"""LLM rerankers: a tiny random causal LM (Qwen2 config, 2 layers, hidden 64, MiniLM's tokenizer, which has "yes"
and "no" tokens) scored through the backend equals the yes/no logit difference computed directly with transformers,
one prompt at a time, on the prompt Qwen3-Reranker's model card documents."""

from __future__ import annotations

import numpy as np
import pytest

from terazi.rerank.backends import make_scorer
from terazi.rerank.pairs import Pair
from terazi.schemas import LLMRerankerSpec

# Qwen3-Reranker's model card, verbatim
CARD_PREFIX = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    'provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n'
)
CARD_SUFFIX = "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
CARD_INSTRUCTION = "Given a web search query, retrieve relevant passages that answer the query"


def direct(model_dir: str, query: str, doc: str) -> float:
    """logit(yes) − logit(no) at the last position of the documented prompt, unpadded, straight from transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    text = CARD_PREFIX + f"<Instruct>: {CARD_INSTRUCTION}\n<Query>: {query}\n<Document>: {doc}" + CARD_SUFFIX
    ids = torch.tensor([tok.encode(text, add_special_tokens=False)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1]
    return float(logits[tok.convert_tokens_to_ids("yes")] - logits[tok.convert_tokens_to_ids("no")])


PAIRS = [
    Pair("çay kaç dakika demlenir", "d1", "Siyah çay demlikte on iki ile on beş dakika demlenmelidir."),
    Pair("en yüksek dağ", "d2", "Ağrı Dağı Türkiye'nin en yüksek dağıdır, 5137 metredir. " * 3),
    Pair("İstanbul'un fethi hangi yıl oldu", "d3", "1453."),
    Pair("ıspanakta demir var mı", "d4", "Ispanak demir bakımından zengin bir sebzedir ama emilimi düşüktür."),
]


def test_batched_scores_equal_the_direct_yes_no_logit_difference(tmp_path, tiny_llm):
    spec = LLMRerankerSpec(name="llm", kind="llm-reranker", model=tiny_llm, batch_size=3)  # left padding in a batch
    scorer = make_scorer(spec, {}, "", True, str(tmp_path))
    got = scorer.score(PAIRS)
    want = np.array([direct(tiny_llm, p.query, p.doc) for p in PAIRS])
    assert np.abs(want).max() > 1e-3 and np.ptp(want) > 1e-4  # a random model still separates the prompts
    assert np.abs(got - want).max() < 1e-4
    alone = np.concatenate([scorer.score([p]) for p in PAIRS])
    assert np.abs(alone - got).max() < 1e-4  # padding changes nothing
    assert (
        scorer.identity.startswith("llm-reranker:")
        and ":torch:fp32@cpu:len=512:logit(yes)-logit(no)" in scorer.identity
    )


def test_prompt_is_qwen3_rerankers_and_only_the_user_turn_is_cut(tmp_path, tiny_llm):
    spec = LLMRerankerSpec(
        name="llm", kind="llm-reranker", model=tiny_llm, max_length=260
    )  # the template alone: ~200 WordPiece tokens
    scorer = make_scorer(spec, {}, "", True, str(tmp_path))
    scorer.inner.load()
    tok = scorer.inner.tokenizer
    assert scorer.inner.prefix == tok.encode(CARD_PREFIX, add_special_tokens=False)
    assert scorer.inner.suffix == tok.encode(CARD_SUFFIX, add_special_tokens=False)
    long = Pair("soru", "d", "uzun bir belge " * 200)
    (seq,) = scorer.inner.prompts([long])
    assert len(seq) == 260 and seq[-len(scorer.inner.suffix) :] == scorer.inner.suffix
    assert np.isfinite(scorer.score([long])).all()


def test_template_and_token_errors(tmp_path, tiny_llm):
    from pydantic import ValidationError

    from terazi.models.refs import ModelError

    with pytest.raises(ValidationError, match="user template lacks {doc}"):
        LLMRerankerSpec(name="x", kind="llm-reranker", model="m", user="<Query>: {query}")
    with pytest.raises(ValidationError, match="only {instruction}, {query} and {doc} are filled in"):
        LLMRerankerSpec(name="x", kind="llm-reranker", model="m", user="{query} {doc} {lang}")
    for sent in ("{query} {doc} {query.__class__}", "{query} {doc} {doc:>999999999}", "{query} {doc} {query!r}"):
        with pytest.raises(ValidationError, match="are filled in, as they are"):  # a form sends this: no attributes,
            LLMRerankerSpec(name="x", kind="llm-reranker", model="m", user=sent)  # no widths, no conversions
    spec = LLMRerankerSpec(name="x", kind="llm-reranker", model=tiny_llm, yes_token="evet-token-yok")
    with pytest.raises(ModelError, match="no single token 'evet-token-yok'"):
        make_scorer(spec, {}, "", True, str(tmp_path)).score(PAIRS[:1])
    spec = LLMRerankerSpec(name="x", kind="llm-reranker", model=tiny_llm, chat="tokenizer")
    with pytest.raises(ModelError, match="has no chat template"):
        make_scorer(spec, {}, "", True, str(tmp_path)).score(PAIRS[:1])


def test_llm_rows_are_models_of_the_config(tiny_llm):
    from terazi.schemas import EvalConfig

    config = EvalConfig(
        datasets=[{"path": "x"}], rerankers=[{"name": "qwen", "kind": "llm-reranker", "model": tiny_llm}]
    )
    assert ("rerankers.qwen", tiny_llm, None, False) in config.models()
