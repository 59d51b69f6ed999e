"""terazi: weigh text rerankers and retrievers honestly.

The Python API (everything is imported on first use, so `import terazi` stays cheap):

    import terazi
    manifest, board = terazi.evaluate({"datasets": [{"path": "data/my-beir"}], "conditions": ["upper", "mobile"]})
    ev = terazi.score("qrels.txt", "run.trec", ["nDCG@10", "RR@10"])      # ev.aggregate, ev.per_query_dict("nDCG@10")
    manifest, board = terazi.analyze("my-runs", out="results/my-runs")   # TREC runs made anywhere
    cmp = terazi.compare("results/a", "results/b")                       # cmp.cells, cmp.overall (polars)
    card = terazi.card("results/a", system="my-ce", labels="tr")           # card.markdown(), .model_index_yaml()
    manifest, counts = terazi.leakage(["data/my-beir"], ["train.jsonl"])  # was the benchmark in the training data?
"""

import sys
import types

from terazi.api import analyze, card, compare, evaluate, leakage, score
from terazi.version import __version__

__all__ = ["__version__", "analyze", "card", "compare", "evaluate", "leakage", "score"]


class _Face(types.ModuleType):
    """The package's face keeps its API: `terazi.leakage` is the function even once the package of the same name
    (terazi/leakage/, the check itself) is imported, which would otherwise bind its module over the name. The
    package is reached by import as ever (`from terazi.leakage import check`)."""

    def __setattr__(self, name: str, value: object) -> None:
        if not (name in __all__ and isinstance(value, types.ModuleType)):
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face
