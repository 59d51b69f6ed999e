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


class _Face(types.ModuleType):
    """`terazi.card` and `terazi.leakage` stay the API's functions once their subpackages (terazi/card/,
    terazi/leakage/) are loaded: the import system binds a loaded subpackage on its parent, which would replace the
    function (so a second `terazi.card(...)` failed). `from terazi.leakage import check` still reads the subpackage."""

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, types.ModuleType) and callable(self.__dict__.get(name)):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face

__all__ = ["__version__", "analyze", "card", "compare", "evaluate", "leakage", "score"]
