"""`build_card`: the Kalbur card reproduced from per-query values with its printed means, the Hugging Face metadata
round-tripped through huggingface_hub, English labels, runs made elsewhere, a clean-only run, judged variants.

The Kalbur folder (tests/card_cases.py) is made by the real aggregation on a run with frozen candidates, its
per-query values made up so that every per-dataset mean is what the card prints: the card is checked against the
files `terazi run` writes, not against files shaped for the card.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import yaml

from terazi.base.errors import DatasetError, IncompleteRunError
from terazi.present.card import build_card
from terazi.results import run_folder as results
from tests.card_cases import CONDITIONS, DATASETS, KALBUR_MOBILE, NAMES, kalbur_run, md_rows, restored

# The card's tables, as printed
CARD_ROWS = """\
| 1 | Qwen3-Reranker-4B | 4.0B | 0.785 | 0.752 | 0.751 | 0.731 | %94.1 | %94.2 | %90.9 |
| 2 | Kalbur (bu model) | 568M | 0.774 | 0.741 | 0.753 | 0.738 | %94.3 | %96.4 | %93.7 |
| 3 | seroe/bge-reranker-v2-m3-turkish-triplet | 568M | 0.768 | 0.733 | 0.741 | 0.728 | %94.0 | %95.4 | %93.1 |
| 3 | BAAI/bge-reranker-v2-m3 | 568M | 0.767 | 0.730 | 0.739 | 0.725 | %93.9 | %95.3 | %93.0 |
| 4 | Qwen3-Reranker-0.6B | 600M | 0.742 | 0.706 | 0.707 | 0.686 | %93.5 | %93.8 | %90.4 |
| 4 | bge-m3 (rerank yok) | 568M | 0.736 | 0.679 | 0.690 | 0.666 | %89.9 | %92.0 | %87.9 |
| 5 | BAAI/bge-reranker-base | 278M | 0.656 | 0.581 | 0.587 | 0.590 | %85.9 | %87.2 | %87.7 |"""
CARD_PER_DATASET = """\
| Model | msmarco-tr * | quora-tr | fiqa-tr | dmm | arzuhal |
|---|---|---|---|---|---|
| Qwen3-Reranker-4B | 0.905 | 0.955 | 0.430 | 0.909 | 0.844 |
| Kalbur (bu model) | 0.926 | 0.969 | 0.402 | 0.906 | 0.822 |
| seroe/bge-reranker-v2-m3-turkish-triplet | 0.929 | 0.965 | 0.396 | 0.894 | 0.818 |
| BAAI/bge-reranker-v2-m3 | 0.930 | 0.965 | 0.396 | 0.895 | 0.811 |
| Qwen3-Reranker-0.6B | 0.872 | 0.929 | 0.355 | 0.908 | 0.778 |
| bge-m3 (rerank yok) | 0.887 | 0.958 | 0.368 | 0.896 | 0.721 |
| BAAI/bge-reranker-base | 0.766 | 0.832 | 0.270 | 0.880 | 0.643 |"""


@pytest.fixture(scope="module")
def kalbur(tmp_path_factory) -> Path:
    return kalbur_run(tmp_path_factory.mktemp("kalbur"))


def test_the_kalbur_card_from_its_own_figures(kalbur):
    card = build_card(kalbur, "kalbur", names=NAMES, model_name="kalbur-reranker")
    md = card.markdown()
    table = md_rows(md, "| Grup")
    assert table[0] == (
        "| Grup | Model | Param | Temiz | BÜYÜK HARF | Türkçe karaktersiz | Mobil | Koruma: BÜYÜK HARF | "
        "Koruma: Türkçe karaktersiz | Koruma: Mobil |"
    )  # the card's header, word for word
    groups = pl.read_csv(kalbur / "leaderboard.csv")["group"].to_list()
    got = [row.split(" | ", 1)[1] for row in table[2:]]  # every column but Grup: the run's groups, not the card's
    assert got == [row.split(" | ", 1)[1] for row in CARD_ROWS.splitlines()]
    assert [int(row.strip("| ").split(" | ")[0]) for row in table[2:]] == groups
    assert "%93.7" in table[3]  # Kalbur's Koruma under Mobil, as the card prints it
    assert "\n".join(md_rows(md, "| Model | msmarco-tr *")) == CARD_PER_DATASET

    # Koruma by hand from the per-query values: the mean over the ranked datasets of mean(Mobil) / mean(Temiz)
    pq = pl.read_parquet(kalbur / "per_query.parquet").filter(pl.col("system") == "kalbur")
    means = {
        (r["dataset"], r["condition"]): r["value"]
        for r in pq.group_by("dataset", "condition").agg(pl.col("value").mean()).iter_rows(named=True)
    }
    by_hand = np.mean([means[(d, "mobile")] / means[(d, "clean")] for d in DATASETS[1:]])
    assert f"{100 * by_hand:.1f}" == "93.7"
    assert {d: round(means[(d, "mobile")], 3) for d in DATASETS[1:]} == KALBUR_MOBILE

    assert (
        card.comparisons_caption
        == "20 hücre = 5 veri seti × 4 koşul; eşleştirilmiş bootstrap, %95 aralık, düzeltme yok"
    )
    counts = md_rows(md, "| Karşılaştırma")
    assert counts[0] == "| Karşılaştırma | Anlamlı üstün | Fark yok | Anlamlı geride |"
    assert counts[2].startswith("| Kalbur vs Qwen3-Reranker-4B |") and len(counts) == 2 + 6
    assert all(sum(map(int, row.strip("| ").split(" | ")[1:])) == 20 for row in counts[2:])
    cmp = pl.read_csv(kalbur / "comparisons.csv")
    seroe = cmp.filter((pl.col("system") == "kalbur") & (pl.col("versus") == "seroe"))
    better = seroe.filter(pl.col("verdict") == "better")
    line = next(x for x in card.significant if x.startswith("seroe/bge-reranker-v2-m3-turkish-triplet ile"))
    assert line.count("(+") == better.height and "anlamlı üstün: " in line
    first = better.row(0, named=True)  # the run's first significant cell, dataset by dataset
    assert f"{first['dataset']}/" in line.split(": ", 1)[1].split(" (")[0] and f"({first['delta']:+.3f})" in line

    text = " ".join(card.method)
    assert "pusula: 5 veri seti (msmarco-tr, quora-tr, fiqa-tr, dmm, arzuhal), test bölümü." in text
    assert (
        "İlk aşama bge-m3 her sorgu için ilk 100 adayı bir kez üretti ve aday listeleri donduruldu (parmak izi "
        "becd8faab2ad20e7); her reranker ilk 30 adayı yeniden sıraladı."
    ) in text
    assert (
        "nDCG@10; ortalama quora-tr, fiqa-tr, dmm, arzuhal üzerinden (msmarco-tr sıralama dışı: bge reranker'ları "
        "MS MARCO ile eğitildi)."
    ) in text
    assert "Grup: komşu modelle fark %95 GA'da anlamsızsa aynı grup" in text and "Koruma: bozulmanın" in text
    assert "Sıra aralıkları" in md and card.rank_line.startswith("Kalbur: Mean (Task) sırası 2")
    assert not card.variants and "Sürümler" not in md


def test_model_index_round_trips_through_huggingface_hub(kalbur):
    from huggingface_hub import ModelCard, ModelCardData

    card = build_card(kalbur, "kalbur", model_name="kalbur-reranker")
    data = ModelCardData(**yaml.safe_load(card.model_index_yaml()))
    results_ = data.eval_results
    assert data.model_name == "kalbur-reranker" and len(results_) == 4 * 4  # ranked datasets × conditions
    pq = pl.read_parquet(kalbur / "per_query.parquet").filter(pl.col("system") == "kalbur")
    want = {
        (r["dataset"], r["condition"]): r["value"]
        for r in pq.group_by("dataset", "condition").agg(pl.col("value").mean()).iter_rows(named=True)
    }
    labels = {"clean": "Temiz", "upper": "BÜYÜK HARF", "ascii_full": "Türkçe karaktersiz", "mobile": "Mobil"}
    fp = {d["name"]: d["fingerprint"] for d in json.loads((kalbur / "manifest.json").read_text())["datasets"]}
    seen = set()
    for r in results_:
        d = r.dataset_type
        cond = next(c for c, label in labels.items() if r.metric_name == f"nDCG@10 ({label})")
        assert r.metric_value == round(want[(d, cond)], 3) and isinstance(r.metric_value, float)
        assert (r.task_type, r.task_name, r.metric_type) == ("text-ranking", "Reranking", "ndcg_at_10")
        assert r.dataset_name == f"pusula {d} (bge-m3 top-30)" and r.dataset_split == "test"
        assert r.dataset_revision == fp[d] and r.source_name is None
        seen.add((d, cond))
    assert seen == {(d, c) for d in DATASETS[1:] for c in CONDITIONS}  # msmarco-tr (out of the ranking) left out
    # the card's own "Evaluation results" lines for Kalbur (dmm Temiz: the card's table prints 0.906, its metadata
    # 0.905)
    got = {(r.dataset_type, r.metric_name): r.metric_value for r in results_}
    assert got[("quora-tr", "nDCG@10 (Mobil)")] == 0.940 and got[("fiqa-tr", "nDCG@10 (Temiz)")] == 0.402
    assert got[("arzuhal", "nDCG@10 (Mobil)")] == 0.779 and got[("dmm", "nDCG@10 (Temiz)")] == 0.906

    # as the front matter of a README, with the card's markdown below it
    readme = ModelCard(f"---\n{card.model_index_yaml()}---\n\n{card.markdown()}")
    assert [(r.dataset_type, r.metric_name, r.metric_value) for r in readme.data.eval_results] == [
        (r.dataset_type, r.metric_name, r.metric_value) for r in results_
    ]

    entries = yaml.safe_load(card.eval_results_yaml())
    assert len(entries) == 16 and {e["dataset"]["task_id"] for e in entries} == set(CONDITIONS)
    e = next(x for x in entries if x["dataset"] == {"id": "quora-tr", "task_id": "mobile", "revision": fp["quora-tr"]})
    assert e["value"] == 0.940 and e["date"] == "2026-05-04" and e["notes"].startswith("nDCG@10 (Mobil); %95 GA [")
    assert "metrik sözleşmesi: trec: gain linear" in e["notes"] and "60 sorgusundan 300 bootstrap" in e["notes"]
    body = json.loads(card.to_json())
    cell = next(c for c in body["cells"] if (c["dataset"], c["condition"]) == ("quora-tr", "mobile"))
    assert (
        cell["value"] == pytest.approx(want[("quora-tr", "mobile")], abs=1e-12)
        and cell["low"] < cell["value"] < cell["high"]
    )
    assert body["ranks"][1]["system"] == "kalbur" and body["results"][1]["mobile retention"] == pytest.approx(
        np.mean([want[(d, "mobile")] / want[(d, "clean")] for d in DATASETS[1:]])
    )


def test_english_labels(kalbur):
    card = build_card(kalbur, "kalbur", labels="en", names=NAMES)
    md = card.markdown()
    assert md_rows(md, "| Group")[0] == (
        "| Group | Model | Param | Clean | UPPER CASE | No Turkish characters | Mobile | "
        "Retention: UPPER CASE | Retention: No Turkish characters | Retention: Mobile |"
    )
    assert "| 93.7% |" in md_rows(md, "| Group")[3] and "%93.7" not in md
    assert (
        card.comparisons_caption
        == "20 cells = 5 datasets × 4 conditions; paired bootstrap, 95% interval, no correction"
    )
    assert "(msmarco-tr is out of the ranking: bge reranker'ları MS MARCO ile eğitildi)" in " ".join(card.method)
    assert "| Kalbur (this model) |" in md and "bge-m3 (no reranking)" in md and "Temiz" not in md
    assert {
        r.metric_name
        for r in __import__("huggingface_hub").ModelCardData(**yaml.safe_load(card.model_index_yaml())).eval_results
    } >= {"nDCG@10 (Clean)", "nDCG@10 (Mobile)"}


def test_a_clean_only_run_has_no_retention(tmp_path):
    run = kalbur_run(tmp_path, conditions=["clean"], systems=["kalbur", "seroe", "first-stage"], n=20)
    card = build_card(run, "kalbur")
    md = card.markdown()
    assert md_rows(md, "| Grup")[0] == "| Grup | Model | Param | Temiz |"
    assert "Koruma" not in md and "Bozuk sorgu" not in md
    assert (
        card.comparisons_caption == "5 hücre = 5 veri seti × 1 koşul; eşleştirilmiş bootstrap, %95 aralık, düzeltme yok"
    )
    assert "parmak izi becd8faab2ad20e7" in md  # it did freeze candidates


def test_runs_made_elsewhere_claim_no_frozen_candidates(tmp_path):
    card = build_card(restored("analyzed", tmp_path), "bm25-tr")
    text = " ".join(card.method)
    assert "fingerprint" not in text and "frozen" not in text and "first stage all" not in text
    assert "TREC run files made elsewhere" in text and "each condition has its own run files" in text
    md = card.markdown()
    assert md_rows(md, "| Group")[0].startswith("| Group | Model | Clean | ")  # no parameters measured: no column
    assert "| first-stage |" in md  # a run file named first-stage is not called an encoder
    assert all("(bge" not in d.name and "top-" not in d.name for d in card.datasets)
    assert (
        build_card(restored("analyzed", tmp_path / "tr"), "bm25-tr", labels="tr")
        .method[1]
        .startswith("Sistemler başka yerde üretilmiş TREC koşu dosyalarıdır")
    )


def test_the_judged_variant_sentence_is_the_runs(tmp_path):
    run = restored("tiny", tmp_path)
    card = build_card(run, "ce")
    run_says = json.loads((run / "tables.json").read_text())["variants"]["sentences"][0]
    assert card.variants == [run_says.replace("hız <speed>; ", "")]  # the golden has no measured speeds
    assert "Sürümler:" in card.markdown() and card.labels == "tr"
    assert card.comparisons_caption.endswith(
        "eşleştirilmiş bootstrap, %90 aralık, Holm düzeltmesi her karşılaştırmanın hücreleri içinde"
    )
    assert "%90 aralık" in card.markdown()
    assert build_card(run, "bm25").variants == []  # another system's variant is not this card's


def test_bad_inputs_are_one_line(tmp_path, kalbur):
    with pytest.raises(DatasetError, match=r"leaderboard.csv: no system 'nope'; systems: qwen3-reranker-4b, kalbur"):
        build_card(kalbur, "nope")
    with pytest.raises(DatasetError, match="no such results folder"):
        build_card(tmp_path / "missing", "kalbur")
    half = tmp_path / "half"
    shutil.copytree(kalbur, half)
    (half / "comparisons.csv").unlink()
    with pytest.raises(DatasetError, match=r"comparisons.csv: missing"):
        build_card(half, "kalbur")
    (half / "comparisons.csv").write_text("x")
    (half / results.MARKER).write_text("{}")
    with pytest.raises(IncompleteRunError, match=r"half: not a complete result: it is marked incomplete"):
        build_card(half, "kalbur")


@pytest.mark.parametrize(
    ("settings", "rule"),
    [
        ({}, "paired bootstrap, 95% interval, no correction"),  # the default: the interval decides, uncorrected
        (
            {"holm": True, "correction": "holm", "correction_scope": "pair", "confidence": 0.9},  # as a run records it
            "paired bootstrap, 90% interval, Holm correction within each comparison's cells",
        ),
        (
            {"verdict": "p"},
            "paired randomization test, Benjamini–Hochberg correction across every comparison of the table",
        ),
        (
            {"verdict": "p", "correction": "holm", "correction_scope": "pair"},
            "paired randomization test, Holm correction within each comparison's cells",
        ),
        ({"verdict": "p", "correction": "none"}, "paired randomization test, no correction"),
    ],
)
def test_the_caption_names_the_test_and_correction_that_decided_the_verdicts(tmp_path, settings, rule):
    run = kalbur_run(tmp_path, conditions=["clean"], systems=["kalbur", "seroe", "first-stage"], n=20)
    m = json.loads((run / "manifest.json").read_text())
    m["config"].update(settings)
    (run / "manifest.json").write_text(json.dumps(m))
    assert build_card(run, "kalbur", labels="en").comparisons_caption == f"5 cells = 5 datasets × 1 condition; {rule}"
