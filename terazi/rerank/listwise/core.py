"""The listwise algorithm, pure: which windows a list is cut into, what a passage looks like in a prompt, how an
answer becomes an order, how it is classified, and the scores the final order becomes.

Each rule follows castorini/rank_llm (the file named in its docstring) so that the same answers give the same order
as RankLLM's; its code is not copied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

OUTCOMES = ("ok", "wrong_format", "repetition", "missing_documents")
Outcome = Literal["ok", "wrong_format", "repetition", "missing_documents"]
BRACKETED = re.compile(r"\[(\d+)\]")
# Digits that look like digits to a reader (superscripts, subscripts, circled, full-width, parenthesised), read as
# the digits they stand for: the table of rank_llm/rerank/listwise/response_utils.py `clean_ranking_response`.
LOOKALIKES = str.maketrans(
    "⁰¹²³⁴⁵⁶⁷⁸⁹₀₁₂₃₄₅₆₇₈₉①②③④⑤⑥⑦⑧⑨❶❷❸❹❺❻❼❽❾０１２３４５６７８９🄀🄁🄂🄃🄄🄅🄆🄇🄈🄉",
    "0123456789012345678912345678912345678901234567890123456789",
)


def windows(n: int, window: int, stride: int) -> list[tuple[int, int]]:
    """[start, end) of each window over a list of `n`, in the order they are asked: from the bottom up, `stride`
    apart, the last one clamped at the top and cut short; it stops once a window starts at the top. RankLLM's
    `ListwiseRankLLM._sliding_windows_batched_async` (what `rerank_batch` runs) and `_count_windows`."""
    out: list[tuple[int, int]] = []
    end = n
    start = max(end - window, 0)
    while end > start:
        out.append((start, end))
        if start == 0:
            break
        end, start = end - stride, max(start - stride, 0)
    return out


def unbracket(text: str) -> str:
    """`[3]` → `(3)`: a bracketed number in a query or passage must not read as a passage's identifier
    (`BaseInferenceHandler._replace_number`)."""
    return BRACKETED.sub(r"(\1)", text)


def passage(text: str, words: int, fix: Callable[[str], str]) -> str:
    """A passage as a prompt shows it: stripped, its Unicode repaired (`fix`: ftfy's `fix_text`, as RankLLM does),
    cut to its first `words` whitespace-separated words, brackets rewritten
    (`BaseInferenceHandler._convert_doc_to_prompt_content`)."""
    return unbracket(" ".join(fix(text.strip()).split()[:words]))


def answer_text(answer: str) -> str:
    """What follows the last `</think>`: a reasoning model's thoughts are never read as a ranking."""
    return answer.split("</think>")[-1] if "</think>" in answer else answer


def order(answer: str | None, n: int) -> list[int]:
    """The window's new order (0-based positions in the window) from an answer, as RankLLM's `receive_permutation`
    reads it: the digits after `</think>` (look-alike digits read as digits, anything else a separator), 1-based;
    repeats dropped (the first wins), numbers outside 1..n dropped, the passages it did not name appended in their
    input order. An answer with no usable number keeps the window's order."""
    text = answer_text(answer or "").translate(LOOKALIKES)
    numbers = "".join(c if c.isdigit() else " " for c in text).split()
    seen: dict[int, None] = {}
    for x in numbers:
        try:
            i = int(x) - 1
        except ValueError:  # a digit int() does not read (RankLLM's parse fails whole: the window's order)
            return list(range(n))
        if 0 <= i < n:
            seen.setdefault(i)
    return [*seen, *(i for i in range(n) if i not in seen)]


def outcome(answer: str | None, n: int, valid: re.Pattern, extract: re.Pattern) -> Outcome:
    """How usable an answer is, as RankLLM's `analysis/response_analysis.py` (`_process_response`) counts it:
    `wrong_format` when the text after `</think>` does not match the template's validation pattern (or names no
    passage), `missing_documents` when it names fewer than `n` or leaves one of 1..n out, `repetition` when it names
    more than `n` or one twice; else `ok`."""
    if answer is None:
        return "wrong_format"
    text = answer_text(answer.strip()).strip()
    if not valid.fullmatch(text):
        return "wrong_format"
    ranks = [int(x) for x in extract.findall(text)]
    if not ranks:
        return "wrong_format"
    if len(ranks) < n:
        return "missing_documents"
    if len(ranks) > n or len(set(ranks)) < n:
        return "repetition"
    return "ok" if set(ranks) == set(range(1, n + 1)) else "missing_documents"


def apply(current: list[int], span: tuple[int, int], new: Sequence[int]) -> list[int]:
    """`current` (the list's items in their present order) with the window `span` reordered by `new` (positions
    within the window)."""
    a, z = span
    cut = current[a:z]
    return [*current[:a], *(cut[i] for i in new), *current[z:]]


def final_scores(final: Sequence[int]) -> np.ndarray:
    """Scores of the list's items (by input position) that sort exactly as `final` orders them, strictly
    decreasing down it (n for the first, 1 for the last): no tie rule can reorder a listwise result."""
    n = len(final)
    out = np.empty(n, dtype=np.float64)
    out[np.asarray(final, dtype=np.int64)] = np.arange(n, 0, -1, dtype=np.float64)
    return out


def budget(n: int) -> int:
    """Output tokens a window of `n` may answer with: the characters of `[1] > [2] > … > [n]`, a bound on its tokens in
    any tokenizer (none has a token shorter than a character), where RankLLM counts them with the model's own
    (`num_output_tokens`): the same budget on a server whose tokenizer terazi cannot see and in process."""
    return len(" > ".join(f"[{i + 1}]" for i in range(n)))
