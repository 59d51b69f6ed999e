"""The column sets of the tables stages hand each other (parquet files named in manifests), and the names of the
conditions, said once.

A query variant is keyed by (condition, sample, query_id); a ranking adds (rank, doc_id, score). The isolated
robustness setting of a condition `c` is the pseudo-condition `c~isolated` (the clean query's candidates reranked with
the corrupted text), so the stages run it like any other condition; it is terazi's own analysis and is never
exported as a run.
"""

from __future__ import annotations

CLEAN = "clean"
SETTING_MARK = "~"
ISOLATED = "isolated"
END_TO_END = "end-to-end"
VARIANT = ["condition", "sample", "query_id"]
RANKING = [*VARIANT, "rank", "doc_id", "score"]
VARIANT_TEXTS = [*VARIANT, "text", "original", "changed", "seed"]
PER_QUERY = ["dataset", "system", "condition", "query_id", "measure", "value", "changed"]


def isolated(condition: str) -> str:
    """The pseudo-condition of `condition`'s isolated setting: `upper` -> `upper~isolated`."""
    return f"{condition}{SETTING_MARK}{ISOLATED}"


def setting_of(condition: str) -> tuple[str, str]:
    """`upper~isolated` -> ("upper", "isolated"); `upper` -> ("upper", "end-to-end")."""
    base, _, setting = condition.partition(SETTING_MARK)
    return base, setting or END_TO_END


def is_configured(condition: str) -> bool:
    """A condition of the configuration (clean, upper, upper+typo, …), not a pseudo-condition of terazi's analysis."""
    return SETTING_MARK not in condition
