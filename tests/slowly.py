"""`python -m tests.slowly STAGE MARK SECONDS ARGS…`: the `terazi` command ARGS with one primitive of STAGE made
slow, for the stop tests (tests/test_stop_stages.py): each call touches MARK (the test then knows the stage is
running) and sleeps SECONDS before doing its real work. What is slowed is the unit the stage repeats (one model
forward pass, one BM25 query), so the stage's own loops, and terazi's checks between units, run unchanged.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

SLOWED = {  # stage -> (module, class or None for a module function, attribute)
    "encoding": ("transformers.models.bert.modeling_bert", "BertModel", "forward"),
    "bi-encoder": ("transformers.models.bert.modeling_bert", "BertModel", "forward"),
    "cross-encoder": ("transformers.models.bert.modeling_bert", "BertForSequenceClassification", "forward"),
    "llm": ("transformers.models.qwen2.modeling_qwen2", "Qwen2ForCausalLM", "forward"),
    "bm25": ("terazi.rerank.backends.bm25", "BM25Scorer", "_token_ids"),
    "bootstrap": ("terazi.analysis.stats", None, "resampled_means"),
}


def slow_down(stage: str, mark: Path, seconds: float) -> None:
    module, cls, name = SLOWED[stage]
    owner = importlib.import_module(module)
    owner = getattr(owner, cls) if cls else owner
    original = getattr(owner, name)

    def slow(*args, **kwargs):
        mark.touch()
        time.sleep(seconds)
        return original(*args, **kwargs)

    setattr(owner, name, slow)


if __name__ == "__main__":
    stage, mark, seconds, *args = sys.argv[1:]
    slow_down(stage, Path(mark), float(seconds))
    from terazi.cli import main

    sys.argv = ["terazi", *args]
    main()
