"""LLM rerankers (Qwen3-Reranker and its kind): a causal language model is asked whether the passage meets the
query, and the score is logit("yes") − logit("no") at the last position.

The prompt is the model's documented template, Qwen3-Reranker's by default:

    <|im_start|>system\\n{system}<|im_end|>\\n<|im_start|>user\\n
    <Instruct>: {instruction}\\n<Query>: {query}\\n<Document>: {doc}
    <|im_end|>\\n<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n

Like the model card's code, the prefix and suffix are tokenised once and only the user turn is cut to fit
`max_length`. Batches are padded on the left, so the last position is every prompt's own last token; position ids
count real tokens only, so a padded prompt scores as it would alone. The logit difference is the log-odds of "yes"
over {yes, no}: the card's probability is sigmoid(score), the ranking is the same, and no precision is lost to a
probability that rounds to 1.
"""

from __future__ import annotations

import numpy as np

from terazi.base import fingerprint
from terazi.base.outside import shown
from terazi.base.shutdown import stoppable
from terazi.models.encoders import torch_dtype
from terazi.models.refs import ModelError
from terazi.rerank.backends.base import Backend
from terazi.rerank.pairs import Pair

MARKER = "\x00terazi-user-turn\x00"


def prompt_parts(spec, tokenizer=None) -> tuple[str, str]:
    """(text before the user turn, text after it up to the answer), for the spec's chat format."""
    if spec.chat == "chatml":
        return (
            f"<|im_start|>system\n{spec.system}<|im_end|>\n<|im_start|>user\n",
            f"<|im_end|>\n<|im_start|>assistant\n{spec.assistant_prefix}",
        )
    if not getattr(tokenizer, "chat_template", None):
        raise ModelError(f"chat: tokenizer, but the tokenizer of {spec.model!r} has no chat template; use chat: chatml")
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": spec.system}, {"role": "user", "content": MARKER}],
        tokenize=False,
        add_generation_prompt=True,
    )
    before, found, after = text.partition(MARKER)
    if not found:
        raise ModelError(f"the chat template of {spec.model!r} drops the user turn")
    return before, after + spec.assistant_prefix


def user_turn(spec, query: str, doc: str) -> str:
    return spec.user.format(instruction=spec.instruction, query=query, doc=doc)


def causal_lm(ref, trust_remote_code: bool, precision: str, what: str, **tokenizer_options):
    """A causal language model and its tokenizer from `ref` (a folder or a hub name at its revision); a failure is one
    ModelError naming the model, its cause passed through `shown` (a hub's message can carry a token)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    common = dict(revision=ref.revision, local_files_only=ref.local, trust_remote_code=trust_remote_code)
    try:
        tok = AutoTokenizer.from_pretrained(ref.location, **common, **tokenizer_options)
        model = AutoModelForCausalLM.from_pretrained(ref.location, **common, dtype=torch_dtype(precision))
    except Exception as e:
        raise ModelError(f"could not load {what} {ref.name!r} from {ref.location}: {shown(e)}") from e
    return tok, model


class LLMReranker(Backend):
    kind = "llm-reranker"
    llm = True

    def _rule(self) -> str:
        s = self.spec
        template = fingerprint.of_json([s.chat, s.system, s.instruction, s.user, s.assistant_prefix])
        return f"logit({s.yes_token})-logit({s.no_token}) template={template}"

    def _load(self):
        s, ref = self.spec, self.ref
        tok, model = causal_lm(ref, s.trust_remote_code, self.precision, "LLM reranker", padding_side="left")
        ids = [tok.convert_tokens_to_ids(t) for t in (s.yes_token, s.no_token)]
        if any(i is None or i == tok.unk_token_id for i in ids):
            raise ModelError(f"{ref.name!r}: the tokenizer has no single token {s.yes_token!r} or {s.no_token!r}")
        self.yes, self.no = ids
        self.tokenizer = tok
        before, after = prompt_parts(s, tok)
        self.prefix = tok.encode(before, add_special_tokens=False)
        self.suffix = tok.encode(after, add_special_tokens=False)
        self.room = self.max_length - len(self.prefix) - len(self.suffix)
        if self.room < 8:
            raise ModelError(
                f"{ref.name!r}: the template takes {len(self.prefix) + len(self.suffix)} tokens, "
                f"max_length {self.max_length} leaves no room for the query and passage"
            )
        self.pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
        return stoppable(model.to(self.device).eval())

    def prompts(self, pairs: list[Pair]) -> list[list[int]]:
        """Token ids of each pair's whole prompt: prefix, user turn cut to fit, suffix."""
        bodies = self.tokenizer(
            [user_turn(self.spec, p.query, p.doc) for p in pairs],
            add_special_tokens=False,
            truncation=True,
            max_length=self.room,
        )["input_ids"]
        return [self.prefix + b + self.suffix for b in bodies]

    def _forward(self, seqs: list[list[int]]) -> np.ndarray:
        import torch

        width = max(map(len, seqs))
        ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for i, s in enumerate(seqs):
            ids[i, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            mask[i, width - len(s) :] = 1
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            out = self.model(
                input_ids=ids.to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=positions.to(self.device),
                use_cache=False,
                logits_to_keep=1,
            )
        last = out.logits[:, -1, :].float()
        return (last[:, self.yes] - last[:, self.no]).cpu().numpy()

    def _score(self, pairs: list[Pair]) -> np.ndarray:
        seqs = self.prompts(pairs)
        order = np.argsort([len(s) for s in seqs], kind="stable")
        out = np.empty(len(pairs), dtype=np.float64)

        def run(batch: int) -> np.ndarray:
            for i in range(0, len(order), batch):
                idx = order[i : i + batch]
                out[idx] = self._forward([seqs[j] for j in idx])
            return out

        return self.backing_off(run)
