"""MTEB itself on a local BEIR folder, for the parity test and benchmarks/bench_mteb_parity.py: a retrieval task
(`mteb.AbsTaskRetrieval`) over the folder's corpus, queries and judgments, evaluated by `mteb.evaluate` with the
model's predictions saved, and MTEB's own evaluator's per-query values of those predictions."""

from __future__ import annotations

import json
from pathlib import Path

from terazi.data.beir import load_beir

LOCAL = {
    "description": "a local BEIR folder",
    "reference": "https://github.com/embeddings-benchmark/mteb",
    "dataset": {"path": "local", "revision": "local"},
    "category": "t2t",
    "eval_splits": ["test"],
    "eval_langs": ["tur-Latn"],
    "date": ("2024-01-01", "2024-01-01"),
    "dialect": ["Written"],
    "domains": [],
    "task_subtypes": [],
    "license": "cc-by-4.0",
    "annotations_creators": "derived",
    "modalities": ["text"],
    "sample_creation": "found",
    "bibtex_citation": "",
}


def local_task(root: Path, name: str):
    """An MTEB retrieval task named `name` over the BEIR folder `root` (split test; titles joined as MTEB joins
    them, so an untitled corpus reads the same in both)."""
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
    from mteb.abstasks.task_metadata import TaskMetadata

    ds = load_beir(root)

    class Local(AbsTaskRetrieval):
        metadata = TaskMetadata(type="Retrieval", name=name, main_score="ndcg_at_10", **LOCAL)

        def load_data(self, num_proc=None, **kwargs) -> None:
            split = RetrievalSplitData(
                queries=Dataset.from_list([{"id": q, "text": ds.queries[q].text} for q in ds.judged_query_ids]),
                corpus=Dataset.from_list([{"id": d.id, "text": d.text, "title": d.title} for d in ds.docs.values()]),
                relevant_docs={q: dict(v) for q, v in ds.qrels.items()},
                top_ranked=None,
            )
            self.dataset = {"default": {"test": split}}
            self.data_loaded = True

    return Local()


def run_mteb(root: Path, name: str, model_path: str, predictions: Path) -> tuple[dict, dict]:
    """`mteb.evaluate` of the sentence-transformers model at `model_path` on the local task: (its scores of the test
    split, its saved predictions {query: {document: score}})."""
    import mteb
    from sentence_transformers import SentenceTransformer

    result = mteb.evaluate(
        SentenceTransformer(model_path),
        local_task(root, name),
        cache=None,
        prediction_folder=predictions,
        show_progress_bar=False,
    )
    scores = result.task_results[0].scores["test"][0]
    saved = json.loads((predictions / f"{name}_predictions.json").read_text(encoding="utf-8"))
    return scores, saved["default"]["test"]


def mteb_per_query(predictions: dict, qrels: dict) -> dict[str, tuple[float, float]]:
    """MTEB's own evaluator on the predictions: query → (nDCG@10 as pytrec_eval gives it, MRR@10 as MTEB's `mrr`)."""
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores, mrr

    scores = calculate_retrieval_scores(predictions, qrels, [10]).all_scores
    rr = mrr(qrels, predictions, [10])["MRR@10"]
    return {q: (scores[q]["ndcg_cut_10"], r) for q, r in zip(predictions, rr)}
