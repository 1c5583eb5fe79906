"""Regressions from an adversarial pass: each test reproduces a bug that was found and fixed."""

from __future__ import annotations

import pytest

from retain import BudgetInfeasible, HashingEncoder, Memory, Tier
from retain.retention.budget import Budget


def mem(**kwargs: object) -> Memory:
    return Memory(encoder=HashingEncoder(dim=384), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("actor", ["tool", "agent", "retrieved"])
def test_an_untrusted_correction_never_retires_a_protected_record(actor: str) -> None:
    m = mem()
    hc = m.add("The total budget must stay under 5000 EUR.", namespace="n", type="hard_constraint")
    pin = m.add("My preferred name is Sam.", namespace="n", pinned=True)
    m.add("Correction: the total budget must stay under 60000 EUR.", namespace="n", actor=actor, role="assistant")
    m.add("Correction: my preferred name is Alex.", namespace="n", actor=actor, role="assistant")
    for rid in (hc, pin):
        rec = m.get(rid, namespace="n")
        assert rec.superseded_by is None and rec.tier is Tier.CORE
    refused = [e for e in m.store.audit_log("n") if e["op"] == "supersede"]
    assert len(refused) == 2 and all(e["details"]["outcome"] == "refused" for e in refused)
    m.add("Correction: the total budget must stay under 6000 EUR.", namespace="n")  # the user may
    assert m.get(hc, namespace="n").superseded_by is not None


def test_random_policy_refuses_mandatory_records_over_the_budget() -> None:
    m = mem(budget=Budget(1, policy="random"))
    m.add("The total budget must stay under 5000 EUR.", namespace="b", type="hard_constraint")
    with pytest.raises(BudgetInfeasible):
        m.add("Pinned: the user's name is Sam.", namespace="b", pinned=True)
    assert len(m.records(namespace="b")) == 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Alice is 30 years old.", "Bob is 31 years old."),
        ("Paris has 2 million people.", "Berlin has 3 million people."),
        ("Invoice 2023-001 was paid.", "Invoice 2023-002 was paid."),
        ("The meeting room holds at most 10 people.", "The kitchen holds at most 4 people."),
    ],
)
def test_another_subject_with_another_number_is_not_an_update(old: str, new: str) -> None:
    m = mem()
    first = m.add(old, namespace="c", type="hard_constraint")
    m.add(new, namespace="c")
    assert m.get(first, namespace="c").superseded_by is None


def test_a_segment_summary_never_carries_sensitive_records() -> None:
    m = mem()
    m.add("We talked about the hotel booking in Lisbon.", namespace="h", segment="s1", seq=1)
    m.add(
        "The patient was diagnosed with diabetes type 2 last spring.",
        namespace="h",
        segment="s1",
        seq=2,
        type="sensitive",
    )
    m.add("The hotel is near the station in Lisbon, mail bob@example.com.", namespace="h", segment="s1", seq=3)
    m.summarize("h", "s1")
    m.compress_segment("h", "s1")
    text = m.handoff("h").text
    assert "diabetes" not in text and "bob@example.com" not in text


def test_provenance_holds_no_raw_secret() -> None:
    m = mem()
    m.add("Hotel near the station", namespace="p")
    ctx = m.context(
        "email john.doe@example.com card 4111 1111 1111 1111",
        namespace="p",
        budget_tokens=100,
        state={"constraints": {"card": "4111 1111 1111 1111"}},
    )
    prov = m.explain(ctx.provenance_id)
    assert "john.doe@example.com" not in prov.query and "4111" not in str(prov.state)


# --- second adversarial pass: the decoded-record cache, NFKC detection, --state -----------------


def test_a_caller_cannot_corrupt_cached_records_through_their_metadata() -> None:
    m = mem()
    rid = m.add("Alice likes green tea.", namespace="n", metadata={"speaker": "Alice", "tags": ["a"], "d": {"x": 1}})
    rec = m.get(rid, namespace="n")
    with pytest.raises(TypeError):
        rec.metadata["speaker"] = "Mallory"  # type: ignore[index]
    with pytest.raises(TypeError):
        rec.metadata["tags"].append("x")
    with pytest.raises(TypeError):
        rec.metadata["d"]["x"] = 2
    again = m.get(rid, namespace="n")
    assert again.metadata == {"speaker": "Alice", "tags": ["a"], "d": {"x": 1}}
    (hit,) = m.search("green tea", namespace="n", k=1, allow_raw=True)
    assert hit.record.metadata["speaker"] == "Alice"
    copy = dict(rec.metadata)  # a caller's copy is theirs to change, and stores as JSON again
    copy["speaker"] = "Bob"
    new = m.update(rid, "Bob likes green tea.", namespace="n")
    assert m.get(new, namespace="n").metadata["speaker"] == "Alice"
    assert '"tags": [\n' in m.export(namespace="n")


def test_circled_enumeration_numbers_are_not_a_phone_number() -> None:
    from retain.text.privacy import detect

    for text in ("手順①②③④⑤⑥⑦⑧⑨⑩を実行します。", "⓪①②③④⑤⑥⑦⑧⑨"):
        assert detect(text) == [], text
    (found,) = detect("電話番号は０３－１２３４－５６７８です。")  # full-width digits are still folded
    assert found.kind == "phone"


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("キーはsk-live-1234567890abcdefghijです", "sk-live-1234567890abcdefghij", "api_key"),
        ("サーバーのIPは10.20.30.40です", "10.20.30.40", "ip"),
        ("服务器地址是10.20.30.40，端口", "10.20.30.40", "ip"),
        ("サーバーのIPは１０．２０．３０．４０です", "１０．２０．３０．４０", "ip"),
    ],
)
def test_secrets_next_to_cjk_characters_are_found(text: str, secret: str, kind: str) -> None:
    from retain.text.privacy import detect

    assert [(f.kind, text[f.start : f.end]) for f in detect(text)] == [(kind, secret)]
    assert detect("バージョン10.20.30.40をリリースしました") == []  # a version number, as "version 10.20.30.40"


# --- a break-it pass over 4487429 (conflict cues of other languages, boundaries) -----------------

import time  # noqa: E402

from retain.ingest.conflict import Relation, decide  # noqa: E402
from retain.record import MemoryRecord, MemoryType, new_id  # noqa: E402
from retain.text.cues import correction_cues, explicit_cues  # noqa: E402

_ENC = HashingEncoder(dim=384)


def _rec(text: str) -> MemoryRecord:
    return MemoryRecord(id=new_id(), namespace="n", content=text, role="user", embedding=_ENC.encode([text])[0])


def _hard(text: str) -> MemoryRecord:
    return _rec(text).evolve(type=MemoryType.HARD_CONSTRAINT)


_NOT_CORRECTIONS = {
    # (hard constraint, texts that tell a story, ask, hedge or set a condition: none may retire it)
    "Marta hat Zöliakie: streng glutenfreie Abendessen, nur zertifizierte Restaurants.": [
        "Wenn Marta keine Zöliakie hat, stattdessen normale Abendessen, nicht glutenfreie Restaurants.",
        "Falls Marta keine Zöliakie hat: eigentlich normale Abendessen statt glutenfreie Restaurants.",
        "Eigentlich haben wir normale Abendessen für Marta bestellt, keine glutenfreien Restaurants.",
        "Stattdessen bestellte Marta normale Abendessen, keine glutenfreien Restaurants.",
        "Eigentlich mochte Marta normale Abendessen, keine glutenfreien Restaurants.",
        "Wir nahmen für Marta doch lieber normale Abendessen, glutenfreie Restaurants nicht nötig.",
        "Wir haben für Marta doch lieber normale Abendessen bestellt, glutenfreie Restaurants nicht nötig.",
        "Eigentlich wäre es schön, Marta normale Abendessen statt glutenfreie Restaurants.",
        "Eigentlich braucht Marta keine glutenfreien Abendessen in zertifizierten Restaurants, oder",
        "Eigentlich braucht Marta z.B. keine glutenfreien Abendessen in zertifizierten Restaurants?",
    ],
    "Marta est cœliaque : dîners strictement sans gluten, restaurants certifiés uniquement.": [
        "S'il s'avère qu'en fait Marta n'est pas cœliaque, plus de dîners sans gluten.",
        "Finalement Marta mangeait des dîners normaux, pas de restaurants certifiés sans gluten.",
        "Finalement, peut-être que Marta n'a pas besoin de dîners sans gluten ni de restaurants certifiés.",
        "En fait, Marta pourrait se passer de dîners sans gluten et de restaurants certifiés.",
        "En fait, Marta n'a pas besoin de dîners sans gluten ni de restaurants certifiés, n'est-ce pas",
    ],
    "Marta es celíaca: cenas estrictamente sin gluten, solo restaurantes certificados.": [
        "En realidad, Marta comía cenas normales, sin restaurantes certificados sin gluten.",
        "En realidad, Marta tuvo cenas normales, sin restaurantes certificados sin gluten.",
        "En realidad, quizás Marta no necesita cenas sin gluten ni restaurantes certificados.",
        "En realidad, Marta podría no necesitar cenas sin gluten ni restaurantes certificados.",
    ],
    "玛尔塔有乳糜泻：晚餐必须严格无麸质，只去认证餐厅。": [
        "要是，其实玛尔塔没有乳糜泻，晚餐就不用无麸质了。",
        "其实，玛尔塔没有乳糜泻，晚餐不用无麸质了吧",
        "其实，玛尔塔的晚餐需不需要无麸质",
        "其实，玛尔塔的晚餐也许不用无麸质。",
        "其实去年我们晚餐不是无麸质的，玛尔塔也没事。",
        "其实每人预算是45.5欧元吗？晚餐不用无麸质。",
    ],
    "マルタはセリアック病です：夕食は厳密にグルテンフリー、認定レストランのみ。": [
        "実は、マルタはセリアック病ではありませんか",
        "実は、マルタの夕食はグルテンフリーでなくて大丈夫かもしれません。",
        "やっぱり、マルタの夕食はグルテンフリーでなくて大丈夫でしょう",
        "マルタの夕食を普通のレストランに変更しましたか",
        "マルタの夕食を普通のレストランに変更したいです。",
        "マルタの夕食を普通のレストランに変更すれば大丈夫です。",
        "マルタの夕食を普通のレストランに変更しても、グルテンフリーは必要です。",
        "マルタの夕食を普通のレストランに変更しないでください、グルテンフリーは必要です。",
    ],
}


@pytest.mark.parametrize(("constraint", "text"), [(c, t) for c, texts in _NOT_CORRECTIONS.items() for t in texts])
def test_a_foreign_cue_under_a_condition_hedge_past_or_question_retires_no_hard_constraint(
    constraint: str, text: str
) -> None:
    """These retired the constraint: the past, question and hedge lists missed common forms
    ("bestellt", "mangeait", "comía", "吧", "ませんか"), a condition before a marker was not read,
    and "に変更" counted before a wish, a condition, a negation or a question."""
    assert explicit_cues(text) == [], text
    kept = decide(_rec(text), [(_hard(constraint), 0.6)])
    assert kept.relation is Relation.NEW and kept.target is None, text


@pytest.mark.parametrize(
    ("constraint", "text"),
    [
        (
            "Marta hat Zöliakie: streng glutenfreie Abendessen, nur zertifizierte Restaurants.",
            "Eigentlich hat Marta keine Zöliakie: glutenfreie Abendessen sind nicht mehr nötig.",
        ),
        ("玛尔塔有乳糜泻：晚餐必须严格无麸质，只去认证餐厅。", "其实玛尔塔没有乳糜泻，晚餐不用无麸质了。"),
        (
            "マルタはセリアック病です：夕食は厳密にグルテンフリー、認定レストランのみ。",
            "マルタの夕食は普通のレストランに変更しました。グルテンフリーは不要です。",
        ),
    ],
)
def test_foreign_corrections_still_retire_the_hard_constraint(constraint: str, text: str) -> None:
    hc = _hard(constraint)
    fixed = decide(_rec(text), [(hc, 0.6)])
    assert fixed.relation is Relation.UPDATE and fixed.target is hc, text


def test_japanese_change_reports_count_as_before() -> None:
    assert correction_cues("WC-88213を6/25に変更、6/16収録を設定") == ["に変更"]
    assert correction_cues("6/25(木)に変更で。時間は同じ14時から") == ["に変更"]


def test_a_long_german_sentence_of_auxiliaries_is_linear() -> None:
    """The German perfect pattern (an auxiliary, ".*", a participle) re-read the sentence from every
    auxiliary: 68 s for explicit_cues and 270 s for decide on 160 KB."""
    text = "Eigentlich " + "ist " * 40_000
    t0 = time.perf_counter()
    explicit_cues(text)
    decide(_rec(text), [(_hard("The cap must stay at 250."), 0.6)])
    assert time.perf_counter() - t0 < 20


def test_a_modal_running_into_a_cjk_cue_still_hedges_it() -> None:
    """Before 4487429 "we'll改成" was hedged (the modal was read up to the cue); the linear scan
    missed it: no word boundary between "will" and "改"."""
    for text in ("we'll改成6个人", "Checkout will改成 the new export", "ok if6个人了"):
        assert explicit_cues(text) == [], text
    assert explicit_cues("we改成6个人") == ["改成"]


@pytest.mark.parametrize(
    "text", ["The cap May be raised to 300 runs.", "The boss May switch the monthly cap to 300 runs."]
)
def test_capitalised_may_before_a_bare_verb_is_the_modal(text: str) -> None:
    assert explicit_cues(text) == [], text
    assert decide(_rec(text), [(_hard("The monthly cap must stay at 250 runs."), 0.6)]).relation is Relation.NEW


def test_may_as_a_name_or_month_stays_explicit() -> None:
    assert explicit_cues("Theresa May said the monthly cap is now 300 runs.") == ["is now"]
    assert explicit_cues("The cap from last May is now 300.") == ["is now"]
