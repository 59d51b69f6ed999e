"""Every number of one run's results, computed once (terazi.results.aggregate) and shown by every output
(terazi.present): the leaderboard, intervals, retention, the robustness decomposition, the pairwise cells, the clean
means per dataset, the conditions, the costs, the judged variants and the depth sweep, all in the leaderboard's system
order."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from terazi.analysis.judged import Judgement
from terazi.schemas import ModelCost


@dataclass(frozen=True)
class Aggregates:
    order: list[str] = field(metadata={"doc": "systems: significance group, then headline"})
    board: pl.DataFrame = field(metadata={"doc": "leaderboard.csv"})
    intervals: pl.DataFrame = field(metadata={"doc": "headline mean, interval and group per system (clean)"})
    retention: pl.DataFrame = field(metadata={"doc": "retention.csv: per system × condition × setting"})
    decomposition: pl.DataFrame = field(metadata={"doc": "robustness.csv: end to end, reranker only, recall"})
    pairs: pl.DataFrame = field(metadata={"doc": "comparisons.csv: every pair × dataset × condition"})
    detectable: pl.DataFrame = field(metadata={"doc": "datasets.csv: queries and minimum detectable effect"})
    clean_means: pl.DataFrame = field(metadata={"doc": "headline per system × dataset, clean queries"})
    conditions: pl.DataFrame = field(metadata={"doc": "conditions.csv: queries changed per condition"})
    contract: dict[str, str] = field(metadata={"doc": "the headline's metric contract and the statistics' settings"})
    ranks: pl.DataFrame = field(metadata={"doc": "ranks.csv: rank intervals and P(rank 1) per system"})
    costs: dict[str, ModelCost | None] = field(default_factory=dict)
    judgements: list[Judgement] = field(default_factory=list)
    leak_free: pl.DataFrame | None = field(default=None, metadata={"doc": "leak_free.csv (with leakage)"})
    depths: pl.DataFrame | None = field(default=None, metadata={"doc": "depths.csv (with rerank_depths)"})
    ceiling: pl.DataFrame | None = field(default=None, metadata={"doc": "ceiling.csv (with rerank_depths)"})
