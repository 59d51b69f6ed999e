"""What each measure family computes (the grammar of its names: `terazi.schemas.measures`), one entry of `FAMILY`
each; `terazi.metrics.engine` ranks the rows and runs the aggregations.

Each gives, for measure `m` (its n-th): aggregations over a query's judged rows in rank order (`pos`, 0-based;
`grade`), aggregations over its ideal ordering (judgments with grade > 0, best first), and the per-query value from
those columns (`v{n}`, `ideal{n}`, `rel` = relevant judgments at the threshold, `len` = documents returned). Both
row sets also carry `top`, the query's highest grade.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from terazi.schemas import Measure


def _top(m: Measure) -> pl.Expr:
    return pl.col("pos") < m.cutoff if m.cutoff else pl.lit(True)


def _hit(m: Measure) -> pl.Expr:
    return (pl.col("grade") >= m.rel) & _top(m)


def _ndcg(m: Measure, n: int, rel: str):
    g = pl.col("grade").cast(pl.Float64)
    if m.gain == "exponential":
        # (2^g − 1) / 2^top: DCG and its ideal scaled by one power of two, so their ratio is bit for bit the unscaled
        # one, and no grade overflows (2^g is infinite from g = 1024, and ∞ / ∞ is NaN)
        top = pl.col("top").cast(pl.Float64)
        g = 2.0 ** (g - top) - 2.0 ** (-top)
    dcg = (g / (pl.col("pos") + 2).log(2)).filter(_top(m)).sum()
    return (
        [dcg.alias(f"v{n}")],
        [dcg.alias(f"ideal{n}")],
        pl.when(pl.col(f"ideal{n}") > 0).then(pl.col(f"v{n}") / pl.col(f"ideal{n}")),
    )


def _judged(m: Measure, n: int, rel: str):  # judged among the returned top k
    value = pl.when(pl.col("len") > 0).then(pl.col(f"v{n}") / pl.min_horizontal("len", m.cutoff))
    return [_top(m).sum().alias(f"v{n}")], [], value


def _rr(m: Measure, n: int, rel: str):
    return [(1.0 / (pl.col("pos").filter(_hit(m)).min() + 1)).alias(f"v{n}")], [], pl.col(f"v{n}")


def _p(m: Measure, n: int, rel: str):
    return [_hit(m).sum().alias(f"v{n}")], [], pl.col(f"v{n}") / m.cutoff


def _r(m: Measure, n: int, rel: str):
    return [_hit(m).sum().alias(f"v{n}")], [], pl.when(pl.col(rel) > 0).then(pl.col(f"v{n}") / pl.col(rel))


def _ap(m: Measure, n: int, rel: str):  # the i-th relevant document, at rank p, adds precision i / p
    hit = _hit(m)
    return (
        [(hit.cum_sum() / (pl.col("pos") + 1)).filter(hit).sum().alias(f"v{n}")],
        [],
        pl.when(pl.col(rel) > 0).then(pl.col(f"v{n}") / pl.col(rel)),
    )


FAMILY: dict[str, Callable] = {"nDCG": _ndcg, "Judged": _judged, "RR": _rr, "P": _p, "R": _r, "AP": _ap}
