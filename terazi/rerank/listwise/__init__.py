"""Listwise rerankers as RankLLM (castorini/rank_llm) runs them: a window of passages at once, a permutation back.

`core`: the sliding windows, passage cutting, bracket rewriting, the answer's parse and its outcome, scores from the
final order (pure, no model). `prompts`: RankLLM's two prompt templates as data files. `answerers`: who answers a
window (a server behind `/v1/chat/completions`, or transformers in process). `stage`: a row's plan, chunks and
ranking, each window's answer paid for once through the score store.
"""
