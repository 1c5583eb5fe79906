"""Supersede detection (retain.ingest.conflict) and its wiring into Memory.add."""

from __future__ import annotations

import time

import numpy as np
import pytest

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.ingest.conflict import Relation, decide
from retain.ingest.draft import NewMemory
from retain.ingest.signals import negated_terms, value_slots
from retain.memory import Memory
from retain.record import MemoryRecord, MemoryType, Tier, new_id
from retain.text.cues import correction_cues, explicit_cues

NS = "conflict"


def mem(**config: object) -> Memory:
    """A memory deciding by the rules alone (``conflict_model=None``): these tests pin the rules, which
    stay the prior of the learned model; tests/safety/test_conflicts.py covers the learned decision."""
    config.setdefault("conflict_model", None)
    return Memory(encoder=HashingEncoder(64), config=MemoryConfig(**config))  # type: ignore[arg-type]


def rec(text: str, role: str = "user", namespace: str = NS) -> MemoryRecord:
    return MemoryRecord(id=new_id(), namespace=namespace, content=text, role=role, embedding=np.ones(4, np.float32))


def test_correction_supersedes_and_search_presents_only_the_current_name() -> None:
    m = mem()
    sam = m.add("My preferred name is Sam.", namespace=NS)
    alex = m.add("Correction: my preferred name is Alex.", namespace=NS)
    assert alex != sam
    hits = m.search("what is my preferred name", namespace=NS, k=5)
    assert [h.record.id for h in hits] == [alex]
    assert [r.id for r in m.history(alex, namespace=NS)] == [sam, alex]
    old = m.get(sam, namespace=NS)
    assert old.superseded_by == alex and not old.is_current
    assert m.get(alex, namespace=NS).supersedes == sam
    with_history = m.search("what is my preferred name", namespace=NS, k=5, include_superseded=True)
    assert {h.record.id for h in with_history} == {sam, alex}


def test_number_change_is_an_update_not_a_duplicate() -> None:
    m = mem()
    five = m.add("I have worked at Acme for 5 years.", namespace=NS)
    six = m.add("I have worked at Acme for 6 years.", namespace=NS)
    again = m.add("I have worked at Acme for 6 years.", namespace=NS)  # exact duplicate: stored once
    assert again == six != five
    assert m.get(five, namespace=NS).superseded_by == six
    assert [r.content for r in m.records(namespace=NS)] == ["I have worked at Acme for 6 years."]


def test_near_misses_do_not_supersede() -> None:
    m = mem()
    texts = [
        "The desk must be on the ground floor, wheelchair accessible.",
        "The desk must also be near a window.",  # a second constraint on the same subject
        "I have 2 cats.",
        "I also have a dog called Rex.",  # adds, replaces nothing
        "Courier delivered parcel number 136 to dock 3.",
        "Courier delivered parcel number 137 to dock 4.",  # another parcel, not a changed value
        "Flights cost 1,380; 2,820 left of the 4,200 budget.",
    ]
    ids = [m.add(t, namespace=NS) for t in texts]
    assert len(set(ids)) == len(texts)
    assert all(r.is_current for r in m.records(namespace=NS, include_superseded=True))
    assert [e["op"] for e in m.store.audit_log(NS)].count("supersede") == 0


def test_other_namespaces_are_never_superseded() -> None:
    m = mem()
    sam = m.add("My preferred name is Sam.", namespace="a")
    alex = m.add("Correction: my preferred name is Alex.", namespace="b")
    assert m.get(sam, namespace="a").is_current
    assert m.get(alex, namespace="b").supersedes is None


def test_a_judge_can_veto() -> None:
    class Veto:
        def __init__(self) -> None:
            self.asked: list[tuple[str, str, Relation]] = []

        def confirm(self, new: MemoryRecord, old: MemoryRecord, relation: Relation) -> bool:
            self.asked.append((new.content, old.content, relation))
            return False

    judge = Veto()
    m = mem(conflict_judge=judge)
    sam = m.add("My preferred name is Sam.", namespace=NS)
    m.add("Correction: my preferred name is Alex.", namespace=NS)
    assert judge.asked == [("Correction: my preferred name is Alex.", "My preferred name is Sam.", Relation.UPDATE)]
    assert m.get(sam, namespace=NS).is_current


def _words(entry: dict[str, object]) -> str:
    """An audit entry as text without its ids, hashes and timestamp, whose digits may spell "6000" by chance."""
    opaque = {"record_id", "ts", "hash", "prev_hash", "superseded_by", "supersedes"}

    def strip(value: object) -> object:
        return {k: strip(v) for k, v in value.items() if k not in opaque} if isinstance(value, dict) else value

    return str(strip(entry))


def test_superseded_hard_constraint_leaves_core_and_is_audited() -> None:
    m = mem()
    old = m.add("The total budget must stay under 5000 EUR.", namespace=NS, type="hard_constraint")
    assert m.get(old, namespace=NS).tier is Tier.CORE
    new = m.add("Update: the total budget is now 6000 EUR, still a hard limit.", namespace=NS, type="hard_constraint")
    before, after = m.get(old, namespace=NS), m.get(new, namespace=NS)
    assert before.superseded_by == new and before.tier is Tier.DYNAMIC and before.type is MemoryType.HARD_CONSTRAINT
    assert after.supersedes == old and after.tier is Tier.CORE
    (entry,) = [e for e in m.store.audit_log(NS) if e["op"] == "supersede"]
    assert entry["record_id"] == old and entry["actor"] == "user"
    assert entry["details"]["superseded_by"] == new
    assert entry["details"]["signals"] and 0 < entry["details"]["overlap"] <= 1
    assert -1 <= entry["details"]["cosine"] <= 1 and "update" in entry["reason"]
    assert "6000" not in _words(entry)  # the audit log never holds content


def test_add_many_links_within_one_batch_and_switch_off() -> None:
    m = mem()
    first, second = m.add_many(
        [NewMemory("My preferred name is Sam."), NewMemory("Correction: my preferred name is Alex.")], namespace=NS
    )
    assert m.get(first, namespace=NS).superseded_by == second
    off = mem(supersede=False)
    off.add("My preferred name is Sam.", namespace=NS)
    off.add("Correction: my preferred name is Alex.", namespace=NS)
    assert len(off.records(namespace=NS)) == 2


def test_decide_rules() -> None:
    old = rec("It's the payments tests that flake, payments.spec.ts.")
    flip = decide(rec("Looking again, it's mostly orders.spec.ts, not payments."), [(old, 0.5)])
    assert flip.relation is Relation.UPDATE and "negation" in flip.signals and flip.target is old
    thought = decide(rec("Correction: the payments tests are fine.", role="agent_thought"), [(old, 0.9)])
    assert thought.relation is Relation.NEW  # a thought revises thoughts, not what the user said
    tool = decide(rec("Correction: the payments tests are fine.", role="tool"), [(old, 0.9)])
    assert tool.relation is Relation.NEW
    proposal = rec("Option B: the oiled oak block worktop, 1,200.")
    chosen = rec("Let's do the matte grey quartz worktop.")
    switch = decide(rec("Actually, let's switch to the oiled oak block worktop."), [(proposal, 0.6), (chosen, 0.6)])
    assert switch.target is chosen  # the proposal of the new state is adopted, not contradicted
    assert negated_terms("Not TZ: the test reads the clock twice.") == {"tz"}
    assert "#id" in value_slots("parcel number 137")["137"]


def test_a_record_superseding_a_hard_constraint_becomes_one() -> None:
    mem = Memory(encoder=HashingEncoder(64))
    old = mem.add("Realistically I can only practise 30 minutes on weekdays.", namespace="g", type="hard_constraint")
    new = mem.add("Work news: I can do 45 minutes on weekdays now.", namespace="g")
    rec = mem.get(new, namespace="g")
    assert rec.supersedes == old
    assert rec.type is MemoryType.HARD_CONSTRAINT and rec.tier is Tier.CORE
    typed = mem.add("Update: I can do 50 minutes on weekdays now.", namespace="g", type="fact")
    assert mem.get(typed, namespace="g").type is MemoryType.FACT  # a caller's type is kept


def test_a_retraction_supersedes_the_record_that_listed_the_item_not_the_notice() -> None:
    listing = rec("Included after screening: Halvorsen 2019 (n=64), Lindqvist 2022 (n=88), Ybarra 2024 (n=102).")
    listing = listing.evolve(role="agent_action")
    notice = rec("Journal notice: RETRACTION of Lindqvist, S. (2022) after an investigation.", role="tool")
    other = rec("Reading list: Marchetti 2016 (n=40), Okonjo 2021 (n=18).")
    new = rec("Ugh, Lindqvist 2022 is retracted. Drop it completely.")
    decision = decide(new, [(listing, 0.35), (notice, 0.6), (other, 0.3)])
    assert decision.relation is Relation.UPDATE and decision.target is listing
    assert "retraction" in decision.signals and "retracts ['2022']" in decision.reason
    elsewhere = decide(rec("Okonjo's 2019 talk was cancelled."), [(listing, 0.35)])  # no item of the listing
    assert elsewhere.relation is Relation.NEW
    from_tool = decide(rec("Lindqvist 2022 is retracted.", role="tool"), [(listing, 0.35)])  # tool output
    assert from_tool.relation is Relation.NEW


def hard(text: str) -> MemoryRecord:
    return rec(text).evolve(type=MemoryType.HARD_CONSTRAINT)


def test_a_mid_sentence_cue_never_supersedes_a_hard_constraint() -> None:
    coeliac = hard("Marta is coeliac: strictly gluten-free dinners, certified restaurants only.")
    mid = decide(
        rec("Let's book one dinner out on Friday, somewhere gluten-free Marta can actually relax."), [(coeliac, 0.6)]
    )
    assert mid.relation is Relation.NEW and mid.target is None
    assert mid.held is not None and mid.held.target is coeliac and "cue" in mid.held.signals  # refused, kept
    assert "explicit correction" in mid.held.reason
    cap = hard("The total budget must stay under 5000 EUR.")
    value_only = decide(rec("The total budget must stay under 6000 EUR."), [(cap, 0.95)])  # no cue at all
    assert value_only.relation is Relation.NEW and value_only.held is not None and "value" in value_only.held.signals
    assert explicit_cues("Somewhere Marta can actually relax.") == []
    assert explicit_cues("Oh, actually the cap is 300. Change of plan: we fly Monday.") == [
        "actually",
        "change of plan",
    ]
    assert explicit_cues("Window update: the window is now 01:00-05:00 UTC.") == ["update:", "is now"]
    assert explicit_cues("FYI infra raised the test budget to 12 minutes.") == ["raised the test budget to"]
    assert explicit_cues("Jonas says checkout will switch the export to dot decimals.") == []  # not made yet
    assert explicit_cues("计划有变，一共6个人") == ["计划有变"] and explicit_cues("如果改成6个人") == []


def test_an_explicit_correction_supersedes_a_hard_constraint() -> None:
    coeliac = hard("Marta is coeliac: strictly gluten-free dinners, certified restaurants only.")
    opening = decide(
        rec("Actually, Marta is not coeliac after all: gluten-free dinners are not needed."), [(coeliac, 0.6)]
    )
    assert opening.relation is Relation.UPDATE and opening.target is coeliac and opening.held is None
    clause = decide(
        rec("Good news - correction: Marta's gluten-free dinners can be at any restaurant."), [(coeliac, 0.6)]
    )
    assert clause.relation is Relation.UPDATE and clause.target is coeliac


def test_a_soft_preference_is_still_superseded_by_a_mid_sentence_cue() -> None:
    pref = rec("Marta would like gluten-free dinners at certified restaurants.").evolve(type=MemoryType.SOFT_PREFERENCE)
    new = rec("Let's book one dinner out on Friday, somewhere gluten-free Marta can actually relax.")
    decision = decide(new, [(pref, 0.6)])
    assert decision.relation is Relation.UPDATE and decision.target is pref and decision.held is None
    weaker = decide(new, [(pref, 0.6), (hard(pref.content), 0.5)])  # a weaker constraint candidate is kept
    assert weaker.target is pref and weaker.held is None
    stronger = decide(new, [(pref, 0.6), (hard(pref.content), 0.7)])  # it would have won: nothing superseded
    assert stronger.relation is Relation.NEW and stronger.held is not None and stronger.held.target is not pref


def test_memory_keeps_a_hard_constraint_without_an_explicit_correction_and_audits_the_refusal() -> None:
    m = mem()
    cap = m.add("The total budget must stay under 5000 EUR for the whole trip.", namespace=NS, type="hard_constraint")
    mid = m.add("We could actually spend 6000 EUR, the total budget of the whole trip.", namespace=NS)
    kept = m.get(cap, namespace=NS)
    assert kept.is_current and kept.tier is Tier.CORE and m.get(mid, namespace=NS).supersedes is None
    (entry,) = [e for e in m.store.audit_log(NS) if e["op"] == "supersede"]
    assert entry["record_id"] == cap and entry["details"]["outcome"] == "refused"
    assert entry["details"]["proposed_by"] == mid and "explicit correction" in entry["reason"]
    assert "6000" not in _words(entry)  # the audit log never holds content
    fixed = m.add("Actually, the total budget for the whole trip is 6000 EUR.", namespace=NS)
    assert m.get(cap, namespace=NS).superseded_by == fixed
    assert m.get(fixed, namespace=NS).type is MemoryType.HARD_CONSTRAINT


def test_a_long_batch_finds_a_correction_far_back_and_bounds_what_each_record_is_compared_with() -> None:
    """In a batch, a record is compared with every earlier one only while they are few (<= 4 * window);
    after that with its nearest and best term matches among them, which still find a correction of a
    record hundreds of items back; decide() never sees more than 2 * window earlier batch records."""
    import retain.ingest.detect as conflict  # find_updates calls decide through its module

    filler = [
        NewMemory(f"Note {i}: the courier van {i % 7} left depot {chr(65 + i % 26)} on schedule.") for i in range(300)
    ]
    items = [NewMemory("My preferred name is Sam."), *filler, NewMemory("Correction: my preferred name is Alex.")]
    seen: list[int] = []
    real = conflict.decide

    def counting(new: MemoryRecord, candidates: list[tuple[MemoryRecord, float]], **kw: object) -> object:
        seen.append(len(candidates))
        return real(new, candidates, **kw)  # type: ignore[arg-type]

    m = mem()
    conflict.decide = counting  # type: ignore[assignment]
    try:
        ids = m.add_many(items, namespace=NS)
    finally:
        conflict.decide = real
    assert m.get(ids[0], namespace=NS).superseded_by == ids[-1]
    assert len(seen) >= 300  # every filler carries a number: each one reaches decide()
    assert seen[:40] == list(range(1, 41))  # up to 4 * window (the default 10) earlier records: all of them
    assert max(seen[40:]) <= 2 * 10  # then at most 2 * window (nothing was stored before the batch)


def test_may_is_the_month_after_a_preposition_or_capitalised_inside_a_sentence() -> None:
    assert explicit_cues("In May the cap is now 300.") == ["is now"]
    assert explicit_cues("By May the cap is now 300.") == ["is now"]
    assert explicit_cues("From mid-May the cap is now 300.") == ["is now"]
    assert explicit_cues("The cap from last May is now 300.") == ["is now"]  # capitalised, not sentence-initial
    cap = hard("The monthly cap must stay at 250 runs.")
    fixed = decide(rec("In May the monthly cap is now 300 runs."), [(cap, 0.6)])
    assert fixed.relation is Relation.UPDATE and fixed.target is cap


def test_may_stays_a_modal_at_a_sentence_start_in_lower_case_and_before_a_subject() -> None:
    for text in (
        "May I change the cap to 300?",
        "We may raise the cap to 300.",
        "May I switch the cap to 300?",
        "We may switch the cap to 300.",
        "Thanks. May we switch the cap to 300?",
        "Hi Anna, May I switch the cap to 300?",  # capitalised mid-sentence, but a question: a subject follows
    ):
        assert explicit_cues(text) == [], text
    cap = hard("The monthly cap must stay at 250 runs.")
    assert decide(rec("We may switch the monthly cap to 300 runs."), [(cap, 0.6)]).relation is Relation.NEW


# (language, hard constraint, corrections that retire it, stories and questions that must not)
LANGUAGES = [
    (
        "de",
        "Marta hat Zöliakie: streng glutenfreie Abendessen, nur zertifizierte Restaurants.",
        [
            "Eigentlich hat Marta keine Zöliakie: glutenfreie Abendessen sind nicht mehr nötig.",
            "Wir nehmen für Marta doch lieber normale Abendessen, glutenfreie Restaurants sind nicht nötig.",
        ],
        [
            "Eigentlich wollten wir glutenfrei essen, aber wir waren in einer normalen Pizzeria, Marta ging es gut.",
            "Wir haben dann doch lieber normale Abendessen gegessen, Marta ging es gut.",
            "Stattdessen normale Abendessen für Marta, nicht glutenfreie Restaurants?",
        ],
    ),
    (
        "fr",
        "Marta est cœliaque : dîners strictement sans gluten, restaurants certifiés uniquement.",
        [
            "En fait, Marta n'est pas cœliaque : les dîners sans gluten ne sont plus nécessaires.",
            "Finalement, Marta mange de tout : plus besoin de dîners sans gluten ni de restaurants certifiés.",
        ],
        [
            "Finalement, on a dîné dans une pizzeria normale, Marta allait bien, pas de dîners sans gluten.",
            "En fait, pourquoi pas des dîners normaux plutôt que sans gluten pour Marta ?",
        ],
    ),
    (
        "es",
        "Marta es celíaca: cenas estrictamente sin gluten, solo restaurantes certificados.",
        ["En realidad, Marta no es celíaca: las cenas sin gluten ya no hacen falta."],
        [
            "En realidad cenamos en una pizzería normal, sin cenas sin gluten, y Marta estuvo bien.",
            "¿En realidad Marta necesita cenas sin gluten en restaurantes certificados?",
        ],
    ),
    (
        "zh",
        "玛尔塔有乳糜泻：晚餐必须严格无麸质，只去认证餐厅。",
        ["其实，玛尔塔没有乳糜泻，晚餐不用无麸质了。"],
        ["其实我们昨天晚餐去了一家普通的披萨店，没吃无麸质，玛尔塔也没事。", "其实，玛尔塔的晚餐可以不用无麸质吗？"],
    ),
    (
        "ja",
        "マルタはセリアック病です：夕食は厳密にグルテンフリー、認定レストランのみ。",
        [
            "実は、マルタはセリアック病ではありません。夕食はグルテンフリーでなくて大丈夫です。",
            "やっぱり、マルタの夕食はグルテンフリーでなくて大丈夫です。",
            "マルタの夕食は普通のレストランに変更で、グルテンフリーは不要です。",
        ],
        [
            "実は昨日、マルタと普通のピザ屋で夕食を食べた。グルテンフリーではなかったけど、平気だった。",
            "やっぱり、マルタの夕食はグルテンフリーでなくてもいいですか？",
            "マルタの夕食を普通のレストランに変更できますか？",
        ],
    ),
]


@pytest.mark.parametrize(("lang", "constraint", "corrections", "stories"), LANGUAGES, ids=[x[0] for x in LANGUAGES])
def test_a_correction_in_another_language_retires_a_hard_constraint_a_story_or_question_does_not(
    lang: str, constraint: str, corrections: list[str], stories: list[str]
) -> None:
    coeliac = hard(constraint)
    for text in corrections:
        decision = decide(rec(text), [(coeliac, 0.6)])
        assert decision.relation is Relation.UPDATE and decision.target is coeliac, text
        assert explicit_cues(text), text
    for text in stories:
        assert correction_cues(text) == [] and explicit_cues(text) == [], text
        kept = decide(rec(text), [(coeliac, 0.6)])
        assert kept.relation is Relation.NEW and kept.target is None, text
        soft = coeliac.evolve(type=MemoryType.SOFT_PREFERENCE)  # not even a preference is corrected by a story
        assert decide(rec(text), [(soft, 0.6)]).relation is Relation.NEW, text


def test_english_past_stories_and_questions_leave_a_hard_constraint_current() -> None:
    coeliac = hard("Marta is coeliac: strictly gluten-free dinners, certified restaurants only.")
    for text in (
        "We had dinner at a normal pizza place instead, Marta was fine.",
        "Why not drop gluten-free dinners instead? Just asking.",
    ):
        assert decide(rec(text), [(coeliac, 0.6)]).relation is Relation.NEW, text


ENGLISH_NON_CORRECTIONS = [
    "If the venue cancels, actually we go with the pizza place.",  # a condition before the cue
    "In case the venue cancels, actually we go with the pizza place for dinner.",
    "Actually, maybe we could drop the gluten-free rule.",  # a hedge after the cue
    "Actually, we might raise the budget to 5000.",
    "Correction: I guess the total budget is 5000 EUR now.",
    "Actually, the budget would be 5000 then, not sure.",
    "Instead, we had dinner at a normal pizza place, Marta was fine.",  # a story told in the past
    "Actually, yesterday Marta ate a normal pizza and she was fine with the dinner.",
    "He said: actually the budget is 5000.",  # reported speech
    "She says that actually the total budget is now 5000 EUR.",
]


@pytest.mark.parametrize("text", ENGLISH_NON_CORRECTIONS)
def test_an_english_cue_under_a_condition_hedge_story_or_report_leaves_a_hard_constraint_current(text: str) -> None:
    coeliac = hard("Marta is coeliac: strictly gluten-free dinners.")
    cap = hard("Hard limit: total budget 4200 EUR.")
    assert correction_cues(text), text  # still cues: a soft preference may still yield to them
    assert explicit_cues(text) == [], text
    for constraint in (coeliac, cap):
        decision = decide(rec(text), [(constraint, 0.6)])
        assert decision.relation is Relation.NEW and decision.target is None, (text, constraint.content)


@pytest.mark.parametrize(
    "text",
    [
        "Actually, I changed my mind: the budget is 5000.",
        "Correction: we moved the date to May 5.",  # "May" the month, past tense with a new value
        "Actually, the total budget is 5000 EUR.",
        "Change of plan: we went with 5000 EUR as the total budget.",
        "Yesterday the client raised the total budget to 5000 EUR.",  # a story naming the new value
        "Actually, Marta is not coeliac after all: gluten-free dinners are not needed.",
    ],
)
def test_an_english_correction_in_the_past_or_present_still_retires_a_hard_constraint(text: str) -> None:
    constraints = [
        hard("Hard limit: total budget 4200 EUR."),
        hard("The trip date is fixed: April 28, no changes."),
        hard("Marta is coeliac: strictly gluten-free dinners."),
    ]
    assert explicit_cues(text), text
    decision = decide(rec(text), [(c, 0.6) for c in constraints])
    assert decision.relation is Relation.UPDATE and decision.target in constraints, text


def test_a_160_kb_text_gets_the_cues_and_decision_its_content_calls_for() -> None:
    """Cue detection and the supersede decision on a 160 KB text of 20,000 repeated markers give the
    answers the rules give on short text: only a marker that opens a clause is explicit."""
    filler = "instead " * 20_000  # 160,000 characters
    assert explicit_cues(filler) == ["instead"]  # the first opens the text; the rest are mid-clause
    assert correction_cues(filler) == ["instead"] * 20_000
    cap = hard("The total budget must stay under 5000 EUR for the whole trip.")
    fix = "Actually, the total budget for the whole trip is 6000 EUR. "
    assert decide(rec(fix + filler), [(cap, 0.6)]).target is cap
    assert decide(rec("so " + filler), [(cap, 0.6)]).relation is Relation.NEW  # no sentence about the budget
    cjk = "计划有变，一共6个人。" + "改成6个人了，" * 20_000
    assert explicit_cues(cjk)[:2] == ["计划有变", "改成"] and len(explicit_cues(cjk)) == 40_001


@pytest.mark.parametrize("actor", ["tool", "agent", "retrieved"])
def test_an_untrusted_correction_never_retires_a_protected_record(actor: str) -> None:
    m = Memory(encoder=HashingEncoder(dim=384), config=MemoryConfig(conflict_model=None))  # the rules path
    hc = m.add("The total budget must stay under 5000 EUR.", namespace="n", type="hard_constraint")
    pin = m.add("My preferred name is Sam.", namespace="n", pinned=True)
    m.add("Correction: the total budget must stay under 60000 EUR.", namespace="n", actor=actor, role="assistant")
    m.add("Correction: my preferred name is Alex.", namespace="n", actor=actor, role="assistant")
    for rid in (hc, pin):
        record = m.get(rid, namespace="n")
        assert record.superseded_by is None and record.tier is Tier.CORE
    refused = [e for e in m.store.audit_log("n") if e["op"] == "supersede"]
    assert len(refused) == 2 and all(e["details"]["outcome"] == "refused" for e in refused)
    m.add("Correction: the total budget must stay under 6000 EUR.", namespace="n")  # the user may
    assert m.get(hc, namespace="n").superseded_by is not None


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
    m = Memory(encoder=HashingEncoder(dim=384), config=MemoryConfig(conflict_model=None))  # the rules path
    first = m.add(old, namespace="c", type="hard_constraint")
    m.add(new, namespace="c")
    assert m.get(first, namespace="c").superseded_by is None


ENC384 = HashingEncoder(dim=384)


def encoded(text: str) -> MemoryRecord:
    """A user record in namespace "n" embedded with ``HashingEncoder(384)``."""
    return MemoryRecord(id=new_id(), namespace="n", content=text, role="user", embedding=ENC384.encode([text])[0])


def encoded_hard(text: str) -> MemoryRecord:
    return encoded(text).evolve(type=MemoryType.HARD_CONSTRAINT)


FOREIGN_NON_CORRECTIONS = {
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


@pytest.mark.parametrize(
    ("constraint", "text"), [(c, t) for c, texts in FOREIGN_NON_CORRECTIONS.items() for t in texts]
)
def test_a_foreign_cue_under_a_condition_hedge_past_or_question_retires_no_hard_constraint(
    constraint: str, text: str
) -> None:
    """The past, question and hedge lists hold the common forms ("bestellt", "mangeait", "comía",
    "吧", "ませんか"), a condition before a marker is read, and "に変更" does not count before a
    wish, a condition, a negation or a question."""
    assert explicit_cues(text) == [], text
    kept = decide(encoded(text), [(encoded_hard(constraint), 0.6)])
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
def test_foreign_corrections_retire_the_hard_constraint(constraint: str, text: str) -> None:
    hc = encoded_hard(constraint)
    fixed = decide(encoded(text), [(hc, 0.6)])
    assert fixed.relation is Relation.UPDATE and fixed.target is hc, text


def test_a_long_german_sentence_of_auxiliaries_is_linear() -> None:
    """The German perfect pattern (an auxiliary, then a participle further on) is matched without
    re-reading the text from every auxiliary: the time grows linearly with the text, not quadratically."""
    text = "Eigentlich " + "ist " * 40_000
    t0 = time.perf_counter()
    explicit_cues(text)
    decide(encoded(text), [(encoded_hard("The cap must stay at 250."), 0.6)])
    assert time.perf_counter() - t0 < 20


@pytest.mark.parametrize(
    "text", ["The cap May be raised to 300 runs.", "The boss May switch the monthly cap to 300 runs."]
)
def test_capitalised_may_before_a_bare_verb_is_the_modal(text: str) -> None:
    assert explicit_cues(text) == [], text
    assert (
        decide(encoded(text), [(encoded_hard("The monthly cap must stay at 250 runs."), 0.6)]).relation is Relation.NEW
    )
