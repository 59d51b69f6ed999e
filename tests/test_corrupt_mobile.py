"""mobile: every output is one of the forms docs/corruptions.md documents, each rule fires at its
configured probability, and no rule rewrites a word outside its class."""

from __future__ import annotations

import itertools
import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from terazi.corrupt.conditions import corrupt
from terazi.corrupt.keyboard import KEY_NEIGHBOURS
from terazi.corrupt.mobile import colloquial
from terazi.schemas import CorruptionSpec, MobileSpec

# Written out here rather than taken from terazi.base.turkish: the forms below are the test's own.
_BASE = {
    "ç": "c",
    "ğ": "g",
    "ı": "i",
    "ö": "o",
    "ş": "s",
    "ü": "u",
    "Ç": "C",
    "Ğ": "G",
    "İ": "I",
    "Ö": "O",
    "Ş": "S",
    "Ü": "U",
}
_LOWER = {"İ": "i", "I": "ı"}


def _lower(text: str) -> str:
    return "".join(_LOWER.get(c, c.lower()) for c in text)


def _letter_forms(text: str) -> set[str]:
    """Every way of typing `text` with each Turkish letter kept or replaced by its base letter."""
    return {"".join(p) for p in itertools.product(*[(c, _BASE[c]) if c in _BASE else (c,) for c in text])}


def documented_forms(*alternatives: list[str]) -> set[str]:
    """The documented forms of a query whose pieces each have documented alternatives: as written
    or lowercased, then any Turkish letter typed as its base letter."""
    joined = {"".join(p) for p in itertools.product(*alternatives)}
    return {f for j in joined for cased in {j, _lower(j)} for f in _letter_forms(cased)}


# The sentences of issue 12 and their documented forms (docs/corruptions.md, "Worked examples").
PARTICLE = [" mı", "mı"]  # kept apart or joined to the word before
DONE_WHEN = {
    "Bacak ağrısı ne zaman geçer?": documented_forms(["Bacak ağrısı "], ["ne zaman", "ne zmn"], [" geçer"], ["?", ""]),
    "24-10'a kadar başvuru": documented_forms(["24"], ["-", " "], ["10"], ["'", ""], ["a kadar başvuru"]),
    "1.5 litre su": documented_forms(["1.5 litre su"]),
    "ve/veya şartı": documented_forms(["ve"], ["/", " "], ["veya şartı"]),
    "Koruyacak mı?": documented_forms(["Koruyacak", "Koruycak"], PARTICLE, ["?", ""]),
    "Olacak mı?": documented_forms(["Olacak", "Olcak"], PARTICLE, ["?", ""]),
}


def _one_slip_away(out: str, form: str) -> bool:
    """Same words, each equal to the form's or with one letter replaced by a Turkish-Q neighbour."""
    a, b = out.split(" "), form.split(" ")
    if len(a) != len(b):
        return False
    for wo, wf in zip(a, b):
        diff = [(x, y) for x, y in zip(wo, wf) if x != y]
        if len(wo) != len(wf) or len(diff) > 1:
            return False
        if diff and _lower(diff[0][0]) not in KEY_NEIGHBOURS.get(_lower(diff[0][1]), ""):
            return False
    return True


def _run_cli(text: str, samples: int) -> list[str]:
    from typer.testing import CliRunner

    from terazi.cli import app

    res = CliRunner().invoke(
        app,
        ["corrupt", "--condition", "mobile", "--samples", str(samples)],
        input=json.dumps({"_id": "q", "text": text}, ensure_ascii=False) + "\n",
    )
    assert res.exit_code == 0, res.output
    return [json.loads(line)["text"] for line in res.output.splitlines()]


@pytest.mark.parametrize("text", list(DONE_WHEN))
def test_issue_sentences_only_take_documented_forms(text):
    outs = _run_cli(text, 200)
    assert len(outs) == 200
    forms = DONE_WHEN[text]
    for out in outs:
        low = _lower(out)
        assert "bicak" not in low and "bıcak" not in low and "2410" not in low and "15 litre" not in low
        assert "veveya" not in low and not re.search(r"[ıi]cak\b", low), out
        assert out in forms or any(_one_slip_away(out, f) for f in forms), out
    assert sum(out in forms for out in outs) > 150  # slips are the odd one, not the rule
    assert len(set(outs)) > 5  # and the model varies


def test_issue_sentences_show_each_rule():
    outs = {t: [_lower(o) for o in _run_cli(t, 200)] for t in DONE_WHEN}
    assert any("ne zmn" in o for o in outs["Bacak ağrısı ne zaman geçer?"])
    assert any(o.startswith("24 10a ") for o in outs["24-10'a kadar başvuru"])
    assert any(o.startswith("24-10'a ") for o in outs["24-10'a kadar başvuru"])  # both kept, now and then
    assert any(o.startswith("ve veya ") for o in outs["ve/veya şartı"])
    assert any(o.startswith("koruycak") for o in outs["Koruyacak mı?"])
    assert any(o in ("olcakmi", "olcakmı") for o in outs["Olacak mı?"])


ZERO = MobileSpec(**{k: 0.0 for k in MobileSpec.model_fields})
ONE = MobileSpec(**{k: 1.0 for k in MobileSpec.model_fields} | {"slip": 0.0})


def _mobile(text: str, spec: MobileSpec, sample: int = 0, seed: int = 13) -> str:
    return corrupt(text, "mobile", seed=seed, query_id="q", sample=sample, spec=CorruptionSpec(mobile=spec))


@pytest.mark.parametrize(
    "before, after",
    [
        # bundled demo queries, every rule on (no slips)
        ("Kapadokya'ya nasıl gidilir?", "kapadokyaya nsl gidilir"),
        ("İstanbul'un fethi hangi yıl oldu?", "istanbulun fethi hangi yil oldu"),
        ("Osmanlı Devleti ne zaman kuruldu?", "osmanli devleti ne zmn kuruldu"),
        ("Ispanak demir açısından zengin mi?", "ispanak demir acisindan zenginmi"),
        ("şifremi unuttum e-Devlet'e nasıl girerim", "sifremi unuttum e devlete nsl girerim"),
        ("istanbul'da toplu taşıma kartı nereden alınır", "istanbulda toplu tasima karti nereden alinir"),
        # the rules the demo does not exercise
        ("bir şey değil, geliyor musun?", "bisey diil geliyomusun"),
        ("Ankara'da yarın hava nasıl olacak", "ankarada yarin hava nsl olcak"),
        ("Kaç gün sürecek, nerede bir 1.5 litre?", "kac gun surcek nerde bi 1.5 litre"),
        ("San Diego-Carlsbad (ABD) 24-10'a kadar", "san diego carlsbad abd 24 10a kadar"),
        ("okuyorum, okuyacağım: yiyecek, içecek, alacak, bacak", "okuyom okuycam yiyecek icecek alacak bacak"),
        ("1’den büyük olan sayılar", "1den buyuk olan sayilar"),
        ("www.ankara.bel.tr ne diyor", "www.ankara.bel.tr ne diyo"),
    ],
)
def test_every_rule_on(before, after):
    assert _mobile(before, ONE) == after


def test_every_rule_off_changes_nothing():
    for text in ("Kapadokya'ya nasıl gidilir?", "  bir şey  değil, geliyor musun? ", "24-10'a ve/veya 1.5"):
        assert _mobile(text, ZERO) == text


@pytest.mark.parametrize(
    "before, after",
    [
        ("Ne?", "Ne"),
        ("«Kitap» ne  zaman çıktı?", "Kitap ne  zaman çıktı"),
        ("ali,veli ; ayşe", "ali veli ayşe"),
        ("x (ABD) y", "x ABD y"),
        ("  iki  boşluk  ", "  iki  boşluk  "),
        ("1.5, 2,5 ve 3.", "1.5 2,5 ve 3"),
    ],
)
def test_left_out_marks_leave_one_space_between_words_and_other_spacing_alone(before, after):
    only_punctuation = ZERO.model_copy(update={"punctuation": 1.0})
    assert _mobile(before, only_punctuation) == after


def test_case_is_kept_when_the_query_is_not_lowercased():
    keep_case = ONE.model_copy(update={"lowercase": 0.0, "ascii_query": 0.0, "ascii_letter": 0.0})
    assert _mobile("Olacak mı?", keep_case) == "Olcakmı"
    assert _mobile("NE ZAMAN GELİYOR", keep_case) == "NE ZMN GELİYO"
    assert colloquial("Geliyor musun") == "Geliyomusun"


# Each rule: a query that shows it, and whether an output shows the rule fired.
FIRES = {
    "lowercase": ("Van Gölü neden tuzlu", lambda o: o.startswith("v")),
    "ascii_query": ("çay kaç dakika demlenmeli", lambda o: o == "cay kac dakika demlenmeli"),
    "ascii_letter": ("ç", lambda o: o == "c"),
    "apostrophe": ("Kapadokya'ya", lambda o: "'" not in o),
    "separator": ("ve/veya", lambda o: "/" not in o),
    "punctuation": ("Van Gölü neden tuzlu?", lambda o: "?" not in o),
    "particle": ("zengin mi", lambda o: o == "zenginmi"),
    "verb": ("olacak", lambda o: o == "olcak"),
    "bir": ("bir", lambda o: o == "bi"),
    "bir_sey": ("bir şey", lambda o: o == "bişey"),
    "degil": ("değil", lambda o: o == "diil"),
    "ne_zaman": ("ne zaman", lambda o: o == "ne zmn"),
    "nasil": ("nasıl", lambda o: o == "nsl"),
    "nerede": ("nerede", lambda o: o == "nerde"),
    "slip": ("kedi", lambda o: o != "kedi"),
}


def test_every_rule_has_a_check():
    assert set(FIRES) == set(MobileSpec.model_fields)


@pytest.mark.parametrize("rule", list(FIRES))
@pytest.mark.parametrize("p", ["default", 0.5])
def test_each_rule_fires_at_its_probability(rule, p):
    text, fired = FIRES[rule]
    p = MobileSpec.model_fields[rule].default if p == "default" else p
    spec = ZERO.model_copy(update={rule: p})
    n = 2000
    k = sum(fired(_mobile(text, spec, sample=s)) for s in range(n))
    assert abs(k / n - p) < 4 * math.sqrt(p * (1 - p) / n) + 1e-9, (rule, p, k / n)


# Words the rules must never touch (nouns that look like verb forms, words near the shortenings),
# and words that belong to a rule's class with the only other form the rule may give them.
OUTSIDE = [
    "bacak",
    "Bacak",
    "alacak",
    "yiyecek",
    "gelecek",
    "içecek",
    "açacak",
    "yakacak",
    "sıcak",
    "ocak",
    "uçak",
    "bıçak",
    "kucak",
    "yatak",
    "Ankara",
    "kira",
    "zaman",
    "birlik",
    "değiller",
    "nasılsa",
    "neredeyse",
    "1.5",
    "24",
    "koyar",
    "ayakkabı",
    "miras",
    "mısır",
    "mum",
    "olacaktır",
    "kalacağı",
    "gelmeyecek",
]
CLASS = {
    "olacak": "olcak",
    "koruyacak": "koruycak",
    "geliyor": "geliyo",
    "yapıyorum": "yapıyom",
    "okuyorsun": "okuyon",
    "bir": "bi",
    "değil": "diil",
    "nasıl": "nsl",
    "nerede": "nerde",
    "göreceğim": "görcem",
}
PARTICLES = ["mı", "mi", "mu", "mü", "misin", "mıdır"]


def _norm(text: str) -> str:
    return "".join(_BASE.get(c, c) for c in _lower(text))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(OUTSIDE + list(CLASS) + PARTICLES + ["ne zaman"]), min_size=1, max_size=8),
    st.fixed_dictionaries({k: st.sampled_from([0.0, 0.5, 1.0]) for k in MobileSpec.model_fields if k != "slip"}),
    st.integers(0, 10**6),
)
def test_no_word_outside_a_rule_class_is_rewritten(words, probabilities, seed):
    text = " ".join(words)
    out = _mobile(text, MobileSpec(slip=0.0, **probabilities), seed=seed)
    pattern = ""
    for i, w in enumerate(words):
        forms = {_norm(w)} | ({_norm(CLASS[w])} if w in CLASS else set())
        if w == "ne zaman":
            forms.add("ne zmn")
        sep = "" if i == 0 else (" ?" if w in PARTICLES else " ")
        pattern += sep + "(?:" + "|".join(map(re.escape, sorted(forms))) + ")"
    assert re.fullmatch(pattern, _norm(out)), (text, out)
