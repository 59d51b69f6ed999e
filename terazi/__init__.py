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

import functools
import importlib
import sys
import types

from terazi import api
from terazi.api import analyze, card, compare, evaluate, score
from terazi.version import __version__

__all__ = ["__version__", "analyze", "card", "compare", "evaluate", "leakage", "score"]


class _Leakage:
    """`terazi.leakage` is two things, as the command and the package are: called, the check as `terazi leakage` runs
    it (`terazi.api.leakage`); read, the package of the check itself (terazi/leakage/), so `terazi.leakage.check` and
    `import terazi.leakage.overlap as m` reach it as any package's modules are reached."""

    def __call__(self, *args, **kwargs):
        return api.leakage(*args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("terazi.leakage"), name)


leakage = functools.update_wrapper(_Leakage(), api.leakage)  # help() and the signature are the function's


class _Face(types.ModuleType):
    """The package's face keeps its API: `terazi.leakage` stays the callable above even once the package of the same
    name is imported, which would otherwise bind its module over the name."""

    def __setattr__(self, name: str, value: object) -> None:
        if not (name in __all__ and isinstance(value, types.ModuleType)):
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face
