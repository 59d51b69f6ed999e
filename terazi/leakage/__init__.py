"""Was the benchmark in the training data? Shared word n-grams and repeated queries, both ways.

    from terazi.data.beir import load_beir
    from terazi.leakage import LeakageOptions, TrainSource, write
    from terazi.leakage import check

    result = check([load_beir("data/xquad-tr")], [TrainSource(path="train/", fields=("text", "query"))],
                   LeakageOptions(ngram=8, fold_ascii=True))
    write(result, "results/leakage")

`check` takes typed inputs and returns a `LeakageResult` (pydantic); `write` turns one into an output folder
(summary.json, id lists, report.md, report.html). See docs/leakage.md.
"""

from terazi.leakage.output import write
from terazi.leakage.overlap import check
from terazi.leakage.result import DatasetLeakage, LeakageResult
from terazi.schemas.leakage import LeakageOptions, TrainSource

__all__ = ["DatasetLeakage", "LeakageOptions", "LeakageResult", "TrainSource", "check", "write"]
