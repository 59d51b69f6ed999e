"""The Kalbur card's setup for tests/test_card.py and tests/test_card_command.py: the card's printed figures, a finished
results folder made from them, and golden results folders restored as their runs wrote them.

The Kalbur folder is made by the real aggregation (terazi.results.aggregate.build_leaderboard) on a run with frozen
candidates: tiny BEIR datasets (so the first-stage recall the aggregation reads exists and matches its dataset
fingerprints), per-query values made up so that every per-dataset mean is what the card prints. That way the card
is checked against the files `terazi run` writes, not against files shaped for the card.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl

from terazi.data.beir import write_beir
from terazi.data.loading import load_dataset
from terazi.metrics.contracts import metric_contracts as contracts
from terazi.results import run_folder as results
from terazi.results.aggregate import build_leaderboard
from terazi.schemas import (
    BenchmarkIdentity,
    CandidateSet,
    DatasetSpec,
    EvalConfig,
    ModelCost,
    RerankResult,
    RunManifest,
    ScoreSet,
    VariantSet,
)

GOLDEN = Path(__file__).parent / "golden"
DATASETS = ["msmarco-tr", "quora-tr", "fiqa-tr", "dmm", "arzuhal"]
REASON = "bge reranker'ları MS MARCO ile eğitildi"
CONDITIONS = ["clean", "upper", "ascii_full", "mobile"]
# The Kalbur card, as printed: system -> (display name, params, per-dataset clean (DATASETS order), Temiz,
# (BÜYÜK HARF, Türkçe karaktersiz, Mobil), Koruma for the same three)
CARD = {
    "qwen3-reranker-4b": (
        "Qwen3-Reranker-4B",
        4_000_000_000,
        (0.905, 0.955, 0.430, 0.909, 0.844),
        0.785,
        (0.752, 0.751, 0.731),
        (0.941, 0.942, 0.909),
    ),
    "kalbur": (
        "Kalbur",
        568_000_000,
        (0.926, 0.969, 0.402, 0.906, 0.822),
        0.774,
        (0.741, 0.753, 0.738),
        (0.943, 0.964, 0.937),
    ),
    "seroe": (
        "seroe/bge-reranker-v2-m3-turkish-triplet",
        568_000_000,
        (0.929, 0.965, 0.396, 0.894, 0.818),
        0.768,
        (0.733, 0.741, 0.728),
        (0.940, 0.954, 0.931),
    ),
    "bge-reranker-v2-m3": (
        "BAAI/bge-reranker-v2-m3",
        568_000_000,
        (0.930, 0.965, 0.396, 0.895, 0.811),
        0.767,
        (0.730, 0.739, 0.725),
        (0.939, 0.953, 0.930),
    ),
    "qwen3-reranker-0-6b": (
        "Qwen3-Reranker-0.6B",
        600_000_000,
        (0.872, 0.929, 0.355, 0.908, 0.778),
        0.742,
        (0.706, 0.707, 0.686),
        (0.935, 0.938, 0.904),
    ),
    "first-stage": (
        None,
        568_000_000,
        (0.887, 0.958, 0.368, 0.896, 0.721),
        0.736,
        (0.679, 0.690, 0.666),
        (0.899, 0.920, 0.879),
    ),
    "bge-reranker-base": (
        "BAAI/bge-reranker-base",
        278_000_000,
        (0.766, 0.832, 0.270, 0.880, 0.643),
        0.656,
        (0.581, 0.587, 0.590),
        (0.859, 0.872, 0.877),
    ),
}
# The card's "Evaluation results" metadata gives Kalbur's per-dataset Mobil figures (ranked datasets)
KALBUR_MOBILE = {"quora-tr": 0.940, "fiqa-tr": 0.337, "dmm": 0.896, "arzuhal": 0.779}
NAMES = {s: v[0] for s, v in CARD.items() if v[0]}


def means_of(system: str, conditions: list[str]) -> dict[tuple[str, str], float]:
    """Unrounded per-dataset means that print as the card: clean cells shifted by one δ (|δ| < 0.0005, so each still
    rounds to its printed cell) that brings the ranked mean onto the printed Temiz; corrupted cells as clean × a
    per-dataset ratio r_d = a + b·clean_d solved so that the mean of r_d is the printed Koruma and the mean of
    r_d·clean_d the printed condition mean (Kalbur's Mobil: the card's own per-dataset figures)."""
    _, _, cells, temiz, conds, kept = CARD[system]
    clean = np.array(cells, dtype=float)
    clean[1:] += float(np.clip(temiz - clean[1:].mean(), -0.00045, 0.00045))
    out = {(d, "clean"): float(v) for d, v in zip(DATASETS, clean)}
    c = clean[1:]
    for cond, m, k in zip(["upper", "ascii_full", "mobile"], conds, kept):
        if cond not in conditions:
            continue
        if system == "kalbur" and cond == "mobile":
            ranked = np.array([KALBUR_MOBILE[d] for d in DATASETS[1:]])
        else:
            a, b = np.linalg.solve([[1, c.mean()], [c.mean(), (c * c).mean()]], [k, m])
            ranked = (a + b * c) * c
        out[(DATASETS[0], cond)] = float(clean[0] * 0.97)  # msmarco-tr: out of the ranking, any value
        out.update({(d, cond): float(v) for d, v in zip(DATASETS[1:], ranked)})
    return out


def kalbur_run(
    root: Path, conditions: list[str] = CONDITIONS, systems: list[str] | None = None, labels: str = "tr", n: int = 60
) -> Path:
    """A finished results folder of the card's setup (frozen bge-m3 candidates, top 100, rerank depth 30)."""
    systems = systems or list(CARD)
    rng = np.random.default_rng(7)
    run = root / "run"
    run.mkdir(parents=True)
    datasets, variant_sets, candidates, score_sets, reranks = [], [], [], [], []
    for d in DATASETS:
        qids = [f"q{i:03d}" for i in range(n)]
        folder = write_beir(
            root / "data" / d,
            [{"_id": f"d{i}", "title": "", "text": f"belge {i}"} for i in range(n)],
            [{"_id": q, "text": f"sorgu {q}"} for q in qids],
            [(q, f"d{i}", 1) for i, q in enumerate(qids)],
        )
        m = load_dataset(
            DatasetSpec(
                path=str(folder), name=d, in_ranking=d != "msmarco-tr", reason=REASON if d == "msmarco-tr" else None
            ),
            str(root / "cache"),
            announce=False,
        )
        datasets.append(m)
        cand = pl.DataFrame(
            [
                (c, 0, q, r + 1, f"d{(i + r) % n}", float(-r))
                for c in conditions
                for i, q in enumerate(qids)
                for r in range(min(30, n))
            ],
            schema=["condition", "sample", "query_id", "rank", "doc_id", "score"],
            orient="row",
        )
        cpath = root / "cand" / d / "candidates.parquet"
        cpath.parent.mkdir(parents=True)
        cand.write_parquet(cpath)
        candidates.append(
            CandidateSet(
                fingerprint=f"{len(candidates):016x}",
                lookup_key="0" * 16,
                dataset=d,
                dataset_fingerprint=m.fingerprint,
                encoder="/models/bge-m3",
                encoder_identity="model#bge-m3",
                index={"type": "IndexFlatIP"},
                depth=100,
                faiss_version="1",
                path=str(cpath),
                trec_dir=str(cpath.parent),
                recall={c: 1.0 for c in conditions},
                reused=False,
                queries_encoded=n,
                docs_encoded=n,
                seconds=1.0,
                cost=ModelCost(params=CARD["first-stage"][1], unit="texts", items=10, seconds=1.0),
            )
        )
        for cond in conditions:
            vpath = root / "variants" / d / f"{cond}.parquet"
            vpath.parent.mkdir(parents=True, exist_ok=True)
            pl.DataFrame(
                {
                    "condition": cond,
                    "sample": 0,
                    "query_id": qids,
                    "text": [f"SORGU {q}" for q in qids],
                    "original": [f"sorgu {q}" for q in qids],
                    "changed": cond != "clean",
                }
            ).write_parquet(vpath)
            variant_sets.append(
                VariantSet(
                    dataset=d,
                    condition=cond,
                    params={},
                    seed=13,
                    samples=1,
                    path=str(vpath),
                    n_queries=n,
                    n_changed=0 if cond == "clean" else n,
                )
            )
        shared = rng.uniform(-1, 1, n)
        for s in systems:
            rows = []
            for cond in conditions:
                mean = means_of(s, conditions)[(d, cond)]
                room = 0.4 * min(mean, 1 - mean, 0.05)
                noise = room * (shared - shared.mean()) + room * (lambda e: e - e.mean())(rng.uniform(-1, 1, n))
                rows.append(
                    pl.DataFrame(
                        {
                            "dataset": d,
                            "system": s,
                            "condition": cond,
                            "query_id": qids,
                            "measure": "nDCG@10",
                            "value": mean + noise,
                            "changed": cond != "clean",
                        }
                    )
                )
            path = root / "per_query" / d / f"{s}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pl.concat(rows).write_parquet(path)
            score_sets.append(ScoreSet(system=s, dataset=d, path=str(path), contracts=contracts(["nDCG@10"])))
            if s != "first-stage":
                reranks.append(
                    RerankResult(
                        system=s,
                        dataset=d,
                        identity=f"model#{s}",
                        candidates=candidates[-1].fingerprint,
                        path=str(path),
                        cost=ModelCost(params=CARD[s][1], unit="pairs", items=10, seconds=1.0),
                    )
                )
    config = EvalConfig.model_validate(
        {
            "benchmark": "pusula",
            "datasets": [
                {"path": x.path, "name": x.name, "in_ranking": x.in_ranking, "reason": x.reason} for x in datasets
            ],
            "encoder": {"model": "/models/bge-m3"},
            "depth": 100,
            "rerank_depth": 30,
            "rerankers": [{"name": s, "kind": "bm25"} for s in systems if s != "first-stage"],
            "conditions": conditions,
            "bootstrap_resamples": 300,
            "featured": "kalbur",
            "labels": labels,
            "metrics": ["nDCG@10"],
            "out_dir": str(root),
            "run_name": "run",
        }
    )
    identity = BenchmarkIdentity(name="pusula", fingerprint="becd8faab2ad20e7", parts={})
    (run / results.MARKER).write_text("{}")
    board = build_leaderboard(datasets, variant_sets, candidates, score_sets, config, str(run), identity, reranks)
    manifest = RunManifest(
        terazi_version="test",
        run_dir=str(run),
        kind="python",
        benchmark=identity,
        started="2026-05-04T10:00:00+00:00",
        seconds=1.0,
        config=json.loads(config.model_dump_json()),
        datasets=datasets,
        variants=variant_sets,
        candidates=candidates,
        reranks=reranks,
        scores=score_sets,
        leaderboard=board,
    )
    results.finish(run, manifest.model_dump_json())
    return run


def md_rows(text: str, header_start: str) -> list[str]:
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    out = []
    for line in lines[i:]:
        if not line.startswith("|"):
            break
        out.append(line)
    return out


def restored(golden: str, tmp: Path) -> Path:
    """A golden results folder as its run wrote it: per_query.parquet from per_query.csv, and the manifest's timing
    fields (dropped by the golden normalisation) back."""
    run = tmp / golden
    shutil.copytree(GOLDEN / golden, run)
    pl.read_csv(run / "per_query.csv", schema_overrides={"query_id": pl.Utf8}).write_parquet(run / "per_query.parquet")
    m = json.loads((run / "manifest.json").read_text())
    m.update(started="2026-01-02T03:04:05+00:00", seconds=0.0)
    for c in m["candidates"]:
        c["seconds"] = 0.0
    (run / "manifest.json").write_text(json.dumps(m))
    return run
