"""The card's words in Turkish (the Kalbur card's own) and English, and its number formats.

Scores print with 3 decimals, retention and probabilities as percentages with one decimal, written the Turkish
way (%93.7) or the English way (93.7%); deltas are signed (+0.012). The condition names follow
terazi.present.labels in Turkish; English names are spelt out for a card (UPPER CASE, not `upper`).
"""

from __future__ import annotations

from terazi.present.labels import TR_CONDITIONS
from terazi.present.labels import WORDS as SHARED

EN_CONDITIONS = {
    "clean": "Clean",
    "upper": "UPPER CASE",
    "ascii_full": "No Turkish characters",
    "ascii_partial": "Some Turkish characters dropped",
    "mobile": "Mobile",
    "typo": "Typos",
    "colloquial": "Colloquial",
}

WORDS = {
    "tr": {
        "title": "Değerlendirme",
        "results": "Sonuçlar",
        "model": "Model",
        "this": "bu model",
        "no_rerank": "rerank yok",
        "per_dataset": "Veri seti bazında",
        "pairs": "Eşleştirilmiş karşılaştırmalar",
        "cells": "{n} hücre = {d} veri seti × {c} koşul",
        "versus": "Karşılaştırma",
        "better": "Anlamlı üstün",
        "same": "Fark yok",
        "worse": "Anlamlı geride",
        "by_bootstrap": "eşleştirilmiş bootstrap, {level} aralık",
        "by_randomization": "eşleştirilmiş randomizasyon testi",
        "no_correction": "düzeltme yok",
        "correction": "{name} düzeltmesi {scope}",
        "scope_pair": "her karşılaştırmanın hücreleri içinde",
        "scope_table": "tablonun bütün karşılaştırmaları üzerinde",
        "against_better": "{rival} ile karşılaştırmada anlamlı üstün: {cells}.",
        "against_worse": "{rival} ile karşılaştırmada anlamlı geride: {cells}.",
        "no_cell": "Hiçbir hücrede anlamlı fark yok.",
        "variants": "Sürümler",
        "ranks": "Sıra aralıkları",
        "out": "sıralama dışı",
        "datasets": "{benchmark}: {n} veri seti ({names}), {split} bölümü.",
        "datasets_one": "{benchmark}: {names} veri seti, {split} bölümü.",
        "frozen": "İlk aşama {encoder} her sorgu için ilk {depth} adayı bir kez üretti ve aday listeleri donduruldu "
        "(parmak izi {fingerprint})",
        "reranked": "; her reranker ilk {k} adayı yeniden sıraladı",
        "imported": "Sistemler başka yerde üretilmiş TREC koşu dosyalarıdır; terazi hepsini aynı yargılarla "
        "puanladı (ilk aşamaları ve aday listeleri terazi'nin değil).",
        "metric": "{measure}; ortalama {ranked} üzerinden",
        "metric_all": "{measure}; ortalama veri setleri üzerinden, eşit ağırlıkla",
        "out_reason": "{name} sıralama dışı: {reason}",
        "out_plain": "{name} sıralama dışı",
        "conditions_e2e": "Bozuk sorgu koşulları: {names}; bozuk sorgu ilk aşamadan ve rerankerdan geçer (uçtan uca).",
        "conditions_runs": "Bozuk sorgu koşulları: {names}; her koşulun kendi koşu dosyaları.",
        "group_rule": "Grup: komşu modelle fark {level} GA'da anlamsızsa aynı grup (veri seti dengeli eşleştirilmiş "
        "bootstrap, {resamples} örneklem, temiz sorgular).",
        "retention_rule": "Koruma: bozulmanın değiştirdiği sorgularda bozuk / temiz skor ({how}).",
        "macro": "veri seti başına oran, veri setleri üzerinden ortalama",
        "pooled": "veri seti dengeli ortalamaların oranı",
        "rank_rule": "Sıra aralığı: aynı bootstrap örneklemlerinin her birinde modeller Mean (Task) ölçüsüne göre ve "
        "Borda puanına göre (veri seti başına N − sıra, eşitlikte ortalama sıra) sıralandı; eşitlikte iyi "
        "sıra paylaşılır. Aralık, sıraların ortadaki {level} kısmıdır; P(1.) birinci olunan örneklemlerin "
        "payıdır.",
        "rank_line": "{system}: Mean (Task) sırası {rank} ({level} aralık {span}, birinci olma olasılığı {p1}); "
        "Borda sırası {brank} ({level} aralık {bspan}, {bp1}).",
        "note_out": "* {name}: sıralama dışı",
    },
    "en": {
        "title": "Evaluation",
        "results": "Results",
        "model": "Model",
        "this": "this model",
        "no_rerank": "no reranking",
        "per_dataset": "Per dataset",
        "pairs": "Paired comparisons",
        "cells": "{n} cells = {d} dataset{ds} × {c} condition{cs}",
        "versus": "Comparison",
        "better": "Significantly better",
        "same": "No difference",
        "worse": "Significantly worse",
        "by_bootstrap": "paired bootstrap, {level} interval",
        "by_randomization": "paired randomization test",
        "no_correction": "no correction",
        "correction": "{name} correction {scope}",
        "scope_pair": "within each comparison's cells",
        "scope_table": "across every comparison of the table",
        "against_better": "Against {rival}, significantly better: {cells}.",
        "against_worse": "Against {rival}, significantly worse: {cells}.",
        "no_cell": "No cell differs significantly.",
        "variants": "Variants",
        "ranks": "Rank intervals",
        "out": "out of the ranking",
        "datasets": "{benchmark}: {n} datasets ({names}), {split} split.",
        "datasets_one": "{benchmark}: the {names} dataset, {split} split.",
        "frozen": "The first stage {encoder} produced the top {depth} candidates of every query once and the "
        "candidate lists were frozen (fingerprint {fingerprint})",
        "reranked": "; every reranker reordered the top {k}",
        "imported": "The systems are TREC run files made elsewhere, all scored by terazi against the same judgments "
        "(their first stages and candidates are not terazi's).",
        "metric": "{measure}; averaged over {ranked}",
        "metric_all": "{measure}; averaged over the datasets, equally weighted",
        "out_reason": "{name} is out of the ranking: {reason}",
        "out_plain": "{name} is out of the ranking",
        "conditions_e2e": "Corrupted query conditions: {names}; a corrupted query goes through the first stage and "
        "the reranker (end to end).",
        "conditions_runs": "Corrupted query conditions: {names}; each condition has its own run files.",
        "group_rule": "Group: a model shares its upper neighbour's group unless their difference is significant at "
        "the {level} level (dataset-balanced paired bootstrap, {resamples} resamples, clean queries).",
        "retention_rule": "Retention: corrupted / clean score over the queries the corruption changed ({how}).",
        "macro": "ratio per dataset, averaged over the datasets",
        "pooled": "ratio of the dataset-balanced means",
        "rank_rule": "Rank range: in each of the same bootstrap resamples the models were ranked by Mean (Task) and "
        "by Borda count (per dataset N − rank, average rank on ties); tied models share the better "
        "rank. The range is the central {level} of the ranks, P(first) the share of resamples ranked first.",
        "rank_line": "{system}: rank {rank} by Mean (Task) ({level} range {span}, probability of ranking first "
        "{p1}); rank {brank} by Borda count ({level} range {bspan}, {bp1}).",
        "note_out": "* {name}: out of the ranking",
    },
}


DIGITS = 3  # the card's numbers: three decimals (labels.score and signed print four elsewhere)


def word(key: str, labels: str, **kw) -> str:
    """A card sentence or label: the card's own words, then the one label table of every output
    (terazi.present.labels: group, parameters, retention, rank columns)."""
    return (WORDS[labels].get(key) or SHARED[labels][key]).format(**kw)


def condition(name: str, labels: str) -> str:
    """`mobile` -> Mobil (tr) / Mobile (en); composites name each part; names terazi does not know stay."""
    names = TR_CONDITIONS if labels == "tr" else EN_CONDITIONS
    if name == "clean" and labels == "tr":
        return "Temiz"
    return " + ".join(names.get(p, p) for p in name.split("+"))


def span(low: int, high: int) -> str:
    """A rank range, as the rank table prints it: [2, 4]."""
    return f"[{low}, {high}]"
