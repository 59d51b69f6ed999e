"""The results as a reader sees them: card order, `*` for out-of-ranking datasets with their reason, the featured
system's significant cells, Turkish labels, one system order everywhere, and a report that fits 1200 px."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from terazi.metrics.contracts import metric_contracts
from terazi.results.aggregate import build_leaderboard
from terazi.schemas import BenchmarkIdentity, DatasetManifest, EvalConfig, ScoreSet, VariantSet

REASON = "the bge rerankers were trained on MS MARCO"
# mean nDCG@10 per dataset: kalbur wins quora-tr and fiqa-tr narrowly, seroe wins dmm by far -> kalbur has more
# Borda votes, seroe the higher mean (and its own group). msmarco-tr is out of the ranking.
MEANS = {
    "msmarco-tr": {"kalbur": 0.90, "seroe": 0.93, "first-stage": 0.85},
    "quora-tr": {"kalbur": 0.80, "seroe": 0.79, "first-stage": 0.70},
    "fiqa-tr": {"kalbur": 0.42, "seroe": 0.41, "first-stage": 0.30},
    "dmm": {"kalbur": 0.60, "seroe": 0.85, "first-stage": 0.50},
}
LOSS = {"upper": 0.95, "mobile": 0.90}  # end-to-end factor; the isolated setting loses half as much


def write_run(
    root: Path, labels: str = "tr", featured: str = "kalbur", measures: tuple[str, ...] = ("nDCG@10",)
) -> tuple[Path, EvalConfig]:
    rng = np.random.default_rng(0)
    n = 60
    datasets, variant_sets, score_sets = [], [], []
    for d, means in MEANS.items():
        out = d == "msmarco-tr"
        datasets.append(
            DatasetManifest(
                name=d,
                path=f"/data/{d}",
                split="test",
                task_type="retrieval",
                in_ranking=not out,
                reason=REASON if out else None,
                fingerprint=f"{abs(hash(d)) % 16**16:016x}",
                corpus_fingerprint="0" * 16,
                n_docs=1000,
                n_queries=n,
                n_judgments=2 * n,
                n_queries_without_relevant=3 if d == "fiqa-tr" else 0,
            )
        )
        qids = [f"{d}-q{i:02d}" for i in range(n)]
        for cond in ("clean", "upper", "mobile"):
            path = root / "variants" / d / f"{cond}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pl.DataFrame(
                {
                    "condition": cond,
                    "sample": 0,
                    "query_id": qids,
                    "text": [f"SORGU {q}" if cond != "clean" else f"sorgu {q}" for q in qids],
                    "original": [f"sorgu {q}" for q in qids],
                    "changed": cond != "clean",
                    "seed": 13,
                }
            ).write_parquet(path)
            variant_sets.append(
                VariantSet(
                    dataset=d,
                    condition=cond,
                    params={},
                    seed=13,
                    samples=1,
                    path=str(path),
                    n_queries=n,
                    n_changed=0 if cond == "clean" else n,
                )
            )
        base = rng.uniform(-0.1, 0.1, n)
        for s, m in means.items():
            clean = np.clip(m + base + rng.normal(0, 0.02, n), 0, 1)
            rows = [("clean", clean)]
            for c, f in LOSS.items():
                rows.append((c, clean * f))
                rows.append((f"{c}~isolated", clean * (1 + f) / 2))
            pq = pl.concat(
                [
                    pl.DataFrame(
                        {
                            "dataset": d,
                            "system": s,
                            "condition": c,
                            "query_id": qids,
                            "measure": "nDCG@10",
                            "value": v,
                            "changed": c != "clean",
                        }
                    )
                    for c, v in rows
                ]
            )
            path = root / "per_query" / d / f"{s}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_parquet(path)
            score_sets.append(ScoreSet(system=s, dataset=d, path=str(path), contracts=metric_contracts(list(measures))))
    config = EvalConfig.model_validate(
        {
            "datasets": [
                {"path": x.path, "name": x.name, "in_ranking": x.in_ranking, "reason": x.reason} for x in datasets
            ],
            "rerankers": [{"name": "kalbur", "kind": "bm25"}, {"name": "seroe", "kind": "bm25"}],
            "conditions": ["clean", "upper", "mobile"],
            "bootstrap_resamples": 300,
            "featured": featured,
            "labels": labels,
            "metrics": list(measures),
        }
    )
    identity = BenchmarkIdentity(name="terazi", fingerprint="becd8faab2ad20e7", parts={})
    build_leaderboard(datasets, variant_sets, [], score_sets, config, str(root), identity)
    return root, config


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("run"))[0]


def md_table(text: str, header_start: str) -> list[list[str]]:
    lines = text.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[i:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return [rows[0]] + rows[2:]


def test_card_order_borda_column_and_human_names(run):
    board = pl.read_csv(run / "leaderboard.csv")
    assert board["system"].to_list() == ["seroe", "kalbur", "first-stage"]  # group, then headline
    assert board["borda_rank"].to_list() == [2, 1, 3] and board["group"].to_list() == [1, 2, 3]
    assert not [c for c in board.columns if "~" in c]  # the isolated setting lives in robustness.csv
    md = (run / "leaderboard.md").read_text()
    table = md_table(md, "| Grup")
    assert table[0][:6] == ["Grup", "Model", "Borda sırası", "Borda puanı", "Mean (Task)", "%95 GA"]
    assert [r[1] for r in table[1:]] == ["seroe", "kalbur", "first-stage"]
    assert [r[3] for r in table[1:]] == ["4", "5", "0"]  # votes as numbers people write, not 4.0000
    assert "borda_votes" not in md and re.match(r"\[0\.\d{3}, 0\.\d{3}\]", table[1][5])
    assert "BÜYÜK HARF" in table[0] and "Koruma: Mobil" in table[0] and table[1][-1].startswith("%")
    assert "Mean (TaskType)" not in table[0]  # one task type: it would repeat Mean (Task)


def test_out_of_ranking_is_marked_with_its_reason_everywhere(run, capsys):
    from terazi.cli.run import print_leaderboard

    md, page = (run / "leaderboard.md").read_text(), (run / "report.html").read_text()
    per_ds = md_table(md, "| Model | msmarco-tr *")
    assert per_ds[0] == ["Model", "msmarco-tr *", "quora-tr", "fiqa-tr", "dmm"]
    assert per_ds[-1] == ["sorgu (ilgili belgesiz)", "60 (0)", "60 (0)", "60 (3)", "60 (0)"]  # queries, none relevant
    note = f"* msmarco-tr: out of the ranking ({REASON})"
    assert "\\" + note in md and note in page and "msmarco-tr *" in page
    print_leaderboard(run)
    out = capsys.readouterr().out
    assert "msmarco-tr *" in out and note in out  # the terminal prints the same tables (tables.json)
    tables = json.loads((run / "tables.json").read_text())
    assert note in tables["leaderboard"]["notes"]  # the Prefect artifact's description is built from these notes


def test_artifacts_show_the_same_table(run, monkeypatch):
    from terazi.flows import lifecycle

    made = {}
    monkeypatch.setattr(
        lifecycle, "create_table_artifact", lambda table, key, description: made.update({key: (table, description)})
    )
    monkeypatch.setattr(
        lifecycle, "create_markdown_artifact", lambda markdown, key, description: made.update({key: markdown})
    )
    lifecycle.publish(run, "terazi")
    table, description = made["terazi-leaderboard"]
    assert [r["Model"] for r in table] == ["seroe", "kalbur", "first-stage"] and REASON in description
    # the compact form, as the terminal prints it: score and retention in one cell, so the table fits the page
    assert any(k.endswith("(Koruma)") for k in table[0]) and not any(k.startswith("Koruma:") for k in table[0])
    assert "macro" in description and made["terazi-report"].startswith("# terazi leaderboard")
    per_ds, description = made["terazi-per-dataset"]
    assert "msmarco-tr *" in per_ds[0] and REASON in description
    robust, _ = made["terazi-retention"]
    assert {"Uçtan uca", "%95 GA", "Yalnız reranker", "%95 GA (Yalnız reranker)"} <= set(robust[0])  # no column lost


def test_featured_cells_are_seen_from_the_featured_side():
    from terazi.analysis.intervals import featured_cells

    cells = pl.DataFrame(
        {
            "system": ["a", "a"],
            "versus": ["b", "c"],
            "dataset": ["d", "d"],
            "condition": ["clean"] * 2,
            "delta": [0.1, -0.2],
            "ci_low": [0.05, -0.3],
            "ci_high": [0.2, -0.1],
            "p_value": [0.01, 0.0],
            "verdict": ["better", "worse"],
            "p_randomization": [0.02, 0.001],
            "p_adjusted": [0.02, 0.002],
            "effect_size": [0.5, -0.8],
        }
    )
    b = featured_cells(cells, "b").row(0, named=True)
    assert (b["versus"], b["delta"], b["ci_low"], b["ci_high"], b["verdict"]) == ("a", -0.1, -0.2, -0.05, "worse")
    assert (b["p_randomization"], b["p_adjusted"], b["effect_size"]) == (0.02, 0.02, -0.5)
    assert featured_cells(cells, "a").height == 2 and featured_cells(cells, "c")["verdict"].to_list() == ["better"]


def test_featured_cells_as_the_card_lists_them(run):
    md = (run / "leaderboard.md").read_text()
    section = md.split("## Significant cells: kalbur")[1].split("##")[0]
    lines = [x for x in section.splitlines() if x.startswith("- ")]
    assert [x.split(":")[0] for x in lines] == ["- kalbur vs seroe", "- kalbur vs first-stage"]
    # seroe wins msmarco-tr (out of the ranking, still compared) and dmm in every condition: listed in dataset, then
    # condition order, with the delta from kalbur's side
    worse = lines[0].split("anlamlı geride: ")[1].split(";")[0].split("), ")
    assert [w.split(" (")[0] for w in worse] == [
        "msmarco-tr/Temiz",
        "msmarco-tr/BÜYÜK HARF",
        "msmarco-tr/Mobil",
        "dmm/Temiz",
        "dmm/BÜYÜK HARF",
        "dmm/Mobil",
    ]
    pairs = pl.read_csv(run / "comparisons.csv").filter((pl.col("system") == "seroe") & (pl.col("versus") == "kalbur"))
    dmm_clean = pairs.filter((pl.col("dataset") == "dmm") & (pl.col("condition") == "clean"))["delta"][0]
    assert f"dmm/Temiz ({-dmm_clean:+.3f}" in lines[0] and -dmm_clean == pytest.approx(-0.25, abs=0.01)
    cells = pl.read_csv(run / "comparisons.csv")
    n_sig = cells.filter(
        ((pl.col("system") == "kalbur") | (pl.col("versus") == "kalbur")) & (pl.col("verdict") != "no difference")
    ).height
    assert sum(x.count("(+") + x.count("(-") for x in lines) == n_sig


def test_retention_and_robustness_contract(run):
    ret = pl.read_csv(run / "retention.csv")
    assert set(ret["aggregation"]) == {"macro"} and set(ret["setting"]) == {"end-to-end", "isolated"}
    assert ret.filter((pl.col("system") == "first-stage") & (pl.col("setting") == "isolated")).height == 0
    e2e = ret.filter((pl.col("setting") == "end-to-end") & (pl.col("condition") == "mobile"))
    assert np.allclose(e2e["retention"].to_numpy(), 0.90)  # every ranked dataset's ratio is 0.90
    iso = ret.filter(pl.col("setting") == "isolated").filter(pl.col("condition") == "mobile")
    assert np.allclose(iso["retention"].to_numpy(), 0.95)
    robust = pl.read_csv(run / "robustness.csv")
    assert {"end_to_end", "reranker_only", "first_stage_recall"} <= set(robust.columns)
    md = (run / "leaderboard.md").read_text()
    assert "- retention: macro: mean over datasets of each dataset's ratio" in md
    assert "Yalnız reranker" in md and "Uçtan uca" in md


def test_the_printed_contract_is_the_headlines(tmp_path):
    """Measures listed before the headline do not lend it their relevance threshold."""
    root, _ = write_run(tmp_path, "en", measures=("RR(rel=2)@10", "nDCG@10"))
    md = (root / "leaderboard.md").read_text()
    assert "- headline: nDCG@10" in md and "- relevance_threshold: 1" in md and "- gain: linear" in md


def test_system_order_is_the_same_in_every_table(run):
    page = (run / "report.html").read_text()

    def first_column(table_id: str) -> list[str]:
        body = page.split(f'<table id="{table_id}">')[1].split("</table>")[0]
        return [re.sub("<.*?>", "", c) for c in re.findall(r"<tr[^>]*><td[^>]*>(.*?)</td>", body)]

    order = ["seroe", "kalbur", "first-stage"]
    assert first_column("leaderboard") == [f"{g}" for g in (1, 2, 3)]
    lb = page.split('<table id="leaderboard">')[1].split("</table>")[0]
    assert [re.sub("<.*?>", "", x) for x in re.findall(r"<tr[^>]*><td[^>]*>\d+</td><td[^>]*>(.*?)</td>", lb)] == order
    assert first_column("per-dataset")[:3] == order
    assert list(dict.fromkeys(first_column("robustness"))) == order
    assert list(dict.fromkeys(first_column("pairwise-summary"))) == order[:2]


def test_config_fields_are_checked():
    with pytest.raises(ValueError, match="featured system 'nope'"):
        EvalConfig.model_validate({"datasets": [{"path": "/d"}], "featured": "nope"})
    with pytest.raises(ValueError, match="reason is for a dataset out of the ranking"):
        EvalConfig.model_validate({"datasets": [{"path": "/d", "reason": "why"}]})
    with pytest.raises(ValueError):
        EvalConfig.model_validate({"datasets": [{"path": "/d"}], "retention": "median"})
    c = EvalConfig.model_validate({"datasets": [{"path": "/d"}]})
    assert (c.retention, c.robustness, c.labels, c.featured) == ("macro", "both", "en", None)


PROBE = """<script>
const wrapped = [...document.querySelectorAll('th .w, td')].filter(e => {
  const r = document.createRange(); r.selectNodeContents(e);
  return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size > 1; }).map(e => e.textContent);
const boxes = [...document.querySelectorAll('.table-box')]
  .map(b => ({id: b.firstChild.id, fits: b.scrollWidth <= b.clientWidth + 1}));
const css = [...document.styleSheets].flatMap(s => [...s.cssRules])
  .find(r => r.selectorText === '.table-box').style.overflowX;
document.body.insertAdjacentHTML('beforeend', '<pre id="probe">' + JSON.stringify({
  page: document.documentElement.scrollWidth, wrapped, boxes, css}) + '</pre>');
</script>"""


@pytest.mark.skipif(
    shutil.which("chromium") is None, reason="headless Chromium not installed (Debian package: chromium)"
)
def test_report_in_headless_chromium_at_1200px(run, tmp_path):
    """What a test can check of a rendered page: no horizontal page overflow at 1200 px, tables scroll inside
    their own box (overflow-x: auto), the leaderboard needs no scrolling, no name or header word is broken over
    two lines; and the screenshot is taken (a person judges how it looks)."""
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,2000",
    ]
    page = tmp_path / "probe.html"
    page.write_text((run / "report.html").read_text().replace("</body>", PROBE + "</body>"))
    dom = subprocess.run(
        ["chromium", *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    probe = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', dom).group(1).replace("&quot;", '"'))
    assert probe["page"] <= 1200 and probe["css"] == "auto", probe
    assert probe["wrapped"] == [], probe["wrapped"]
    fits = {b["id"]: b["fits"] for b in probe["boxes"]}
    assert fits["leaderboard"] and fits["per-dataset"] and fits["robustness"], fits
    png = tmp_path / "report.png"
    subprocess.run(
        ["chromium", *flags, f"--screenshot={png}", (run / "report.html").as_uri()], capture_output=True, timeout=120
    )
    assert png.stat().st_size > 50_000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
