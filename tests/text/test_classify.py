"""Behaviour of the rule-based type classifier: one clear case per type and rule family, EN and ZH."""

from __future__ import annotations

import pytest

from retain.record import MemoryType as T
from retain.text.classify import classify, classify_with_reason

CLEAR_CASES = [
    # hard constraints
    ("user", "The wedding venue must hold at least 120 guests.", T.HARD_CONSTRAINT),
    ("user", "My daughter is allergic to shellfish.", T.HARD_CONSTRAINT),
    ("user", "We can't go over 800 dollars for the whole weekend.", T.HARD_CONSTRAINT),
    ("user", "Never schedule meetings on Fridays.", T.HARD_CONSTRAINT),
    ("user", "No more than two layovers, please.", T.HARD_CONSTRAINT),
    ("user", "预算不超过3000元。", T.HARD_CONSTRAINT),
    ("user", "我对花生过敏。", T.HARD_CONSTRAINT),
    ("user", "报告必须在周五之前提交。", T.HARD_CONSTRAINT),
    # soft preferences
    ("user", "I prefer aisle seats on long flights.", T.SOFT_PREFERENCE),
    ("user", "Ideally the hotel would be near the old town.", T.SOFT_PREFERENCE),
    ("user", "I'd rather take the train than drive.", T.SOFT_PREFERENCE),
    ("user", "我喜欢安静的咖啡馆。", T.SOFT_PREFERENCE),
    ("user", "住宿尽量离地铁站近一点。", T.SOFT_PREFERENCE),
    # facts
    ("user", "We moved to Lyon in 2019 and rent a flat on the third floor.", T.FACT),
    ("user", "Let's go with the blue sofa.", T.FACT),
    ("user", "我们一共4个人，两个大人两个孩子。", T.FACT),
    # goals
    ("user", "I want to run a half marathon next spring.", T.GOAL),
    ("user", "Can you help me find a dentist that is open on Saturdays?", T.GOAL),
    ("user", "我的目标是年底前通过驾照考试。", T.GOAL),
    ("user", "帮我找一家适合聚餐的餐厅。", T.GOAL),
    # plan steps
    ("user", "Next step: compare the three insurance quotes.", T.PLAN_STEP),
    ("assistant", "I'll check the train times and come back to you.", T.PLAN_STEP),
    ("agent_action", "search_hotels(city='Porto', nights=3)", T.PLAN_STEP),
    ("agent_action", "查询航班（上海→成都，5月3日）", T.PLAN_STEP),
    ("user", "计划：先订机票，再订酒店。", T.PLAN_STEP),
    # observations
    (
        "tool",
        "SEARCH RESULTS\n1. Hotel Aurora 4.5 stars 120 EUR/night\n2. Hotel Mira 3 stars 80 EUR/night",
        T.OBSERVATION,
    ),
    ("tool", "【航班查询】上海 → 成都 5月3日 | MU5401 08:00-10:50 经济舱 980元", T.OBSERVATION),
    # reasoning
    (
        "agent_thought",
        "The cheaper flight lands too late for the check-in window, so the morning one is better.",
        T.REASONING,
    ),
    ("agent_thought", "两个方案都在预算内，但第二个离景点更近。", T.REASONING),
    # action results
    ("tool", "Booking confirmed: reference QX7781, 2 nights.", T.ACTION_RESULT),
    ("tool", "Error: payment gateway timed out.", T.ACTION_RESULT),
    ("tool", "【订单成功】订单号 A1029 合计560元", T.ACTION_RESULT),
    ("agent_action", "Recommended the lakeside cabin: quiet, within budget, free cancellation.", T.ACTION_RESULT),
    (None, "Result: 3 files uploaded.", T.ACTION_RESULT),
    # sensitive
    ("user", "You can reach me at jane.doe@example.com", T.SENSITIVE),
    ("user", "Charge it to 4111 1111 1111 1111.", T.SENSITIVE),
    ("user", "my password is Tulip#2024", T.SENSITIVE),
    ("user", "IBAN DE89 3704 0044 0532 0130 00 please", T.SENSITIVE),
    ("tool", "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx", T.SENSITIVE),
    ("user", "我的手机号是13812345678。", T.SENSITIVE),
    # chatter
    ("user", "haha that's hilarious", T.CHATTER),
    ("user", "Thanks so much, you're a star!", T.CHATTER),
    ("user", "Hello!", T.CHATTER),
    ("user", "哈哈，太好了", T.CHATTER),
    ("user", "谢谢你！", T.CHATTER),
    ("system", "Reminder: your session will expire in 10 minutes.", T.CHATTER),
    ("tool", "Newsletter: five cafes you have to try this autumn.", T.CHATTER),
    ("tool", "Chat #general: 'who took the last coffee?' (3 reactions)", T.CHATTER),
]


@pytest.mark.parametrize(("role", "text", "expected"), CLEAR_CASES)
def test_clear_cases(role: str | None, text: str, expected: T) -> None:
    got, reason = classify_with_reason(text, role)
    assert got == expected, f"{text!r} ({role}) -> {got} via {reason}"


def test_classify_matches_classify_with_reason() -> None:
    for role, text, _ in CLEAR_CASES:
        assert classify(text, role) == classify_with_reason(text, role)[0]


def test_reason_names_the_rule() -> None:
    assert classify_with_reason("Sorry, the card is 4111 1111 1111 1111", "user")[1] == "sensitive:card"
    assert classify_with_reason("Fees must stay under 2%.", "user")[1] == "hard:must"
    assert classify_with_reason("anything", "agent_thought")[1] == "role:thought"
    assert classify_with_reason("   ", "user") == (T.CHATTER, "empty")


def test_luhn_separates_cards_from_other_long_numbers() -> None:
    assert classify("Tracking number 4111 1111 1111 1112 arrived.", "tool") != T.SENSITIVE
    assert classify("Tracking number 4111 1111 1111 1111 arrived.", "tool") == T.SENSITIVE
    # a card-like run next to a card word is flagged even when the check digit is wrong
    assert classify("Use my card 4111 1111 1111 1112, exp 01/30", "user") == T.SENSITIVE
    # documented sandbox test cards are not secrets
    assert classify("Sandbox cards: 4242 4242 4242 4242 (succeeds)", "tool") == T.OBSERVATION


def test_number_guards() -> None:
    assert classify("The mobile app shipped 2026-04-07 13:22 UTC.", "tool") == T.OBSERVATION
    assert classify("Pin 2 of the connector is ground.", "user") != T.SENSITIVE
    # 18 digits with a valid check character but no valid birth date: not a resident id
    assert classify("批次号 110105000000000017 已入库", "tool") != T.SENSITIVE
    assert classify("身份证号 110105194912310021", "user") == T.SENSITIVE


def test_iban_checksum() -> None:
    assert classify("Transfer to GB82 WEST 1234 5698 7654 32 today", "user") == T.SENSITIVE
    assert classify("Part codes GB82 WEST 1234 5698 7654 33 in stock", "tool") != T.SENSITIVE


def test_masked_secrets_are_not_sensitive() -> None:
    assert classify("Key sk-...x9Q2 revoked at 10:14.", "tool") == T.ACTION_RESULT
    assert classify("Charged to the card ending 4242.", "tool") != T.SENSITIVE


@pytest.mark.parametrize("role", ["user", "tool", "system", "agent_action", "agent_thought", None, "Caroline"])
def test_sensitive_wins_over_every_role(role: str | None) -> None:
    assert classify("token: ghp_abcdefghijklmnopqrstuvwxyz0123456789", role) == T.SENSITIVE


def test_strong_hard_cue_beats_soft_cue() -> None:
    assert classify("I'd prefer Tuesday, but the report must be filed by Monday.", "user") == T.HARD_CONSTRAINT


def test_soft_cue_beats_weak_limit() -> None:
    assert classify("Keep the summary under 300 words if you can.", "user") == T.SOFT_PREFERENCE
    assert classify("Keep the summary to 300 words max.", "user") == T.HARD_CONSTRAINT


def test_system_policy_versus_notice() -> None:
    assert classify("Policy: refunds are only issued within 30 days.", "system") == T.HARD_CONSTRAINT
    assert classify("系统规定：每位乘客最多携带两件行李。", "system") == T.HARD_CONSTRAINT
    assert classify("Your profile was synced.", "system") == T.CHATTER


def test_agent_reply_versus_question_to_user() -> None:
    assert classify("Replied: the museum is closed on Mondays.", "agent_action") == T.CHATTER
    assert classify("Replied: asked which dates they can travel.", "agent_action") == T.PLAN_STEP
    assert classify("回复用户：请确认入住人数。", "agent_action") == T.PLAN_STEP


def test_role_is_case_insensitive_and_speaker_names_use_content_rules() -> None:
    assert classify("hmm", "AGENT_THOUGHT") == T.REASONING
    assert classify("I am allergic to cats.", "Melanie") == T.HARD_CONSTRAINT
    assert classify("My sister is a nurse in Leeds.", "Melanie") == T.FACT


@pytest.mark.parametrize("role", ["user", None])
def test_short_statements_that_name_something_are_facts(role: str | None) -> None:
    # no digits and no cue words: the name or code alone makes it informative (README quickstart)
    assert classify_with_reason("We fly out of Brennick (BRK).", role) == (T.FACT, "default:name")
    assert classify("The photographer is Dana Okafor.", role) == T.FACT
    assert classify("Physio sessions are on Tuesdays.", role) == T.FACT
    assert classify("We use the ACME build server.", role) == T.FACT


@pytest.mark.parametrize("role", ["user", None])
def test_imperative_with_a_deadline_is_a_constraint(role: str | None) -> None:
    assert classify_with_reason("Pay the deposit by Friday.", role) == (T.HARD_CONSTRAINT, "hard:by_when")
    assert classify("Send the signed lease back before tomorrow.", role) == T.HARD_CONSTRAINT
    assert classify("Finish the slides by the end of the week.", role) == T.HARD_CONSTRAINT
    assert classify("Book the venue by end of June.", role) == T.HARD_CONSTRAINT


@pytest.mark.parametrize(
    "text",
    [
        "oh thank god",
        "morning! coffee in hand",
        "thanks!!",
        "Morning! Coffee in hand.",  # a capital after "!" starts a sentence, it names nothing
        "Hi Maria!",  # the name a greeting addresses
        "Hey Jo, long day.",
        "I think I need a nap. I am so tired.",  # the pronoun I is not a name
        "Gut zu wissen, dann hab ich ja nicht so einen Stress",  # German capitalises every noun
    ],
)
def test_real_chatter_stays_chatter(text: str) -> None:
    got, reason = classify_with_reason(text, "user")
    assert got == T.CHATTER, f"{text!r} -> {got} via {reason}"


def test_non_string_text_raises() -> None:
    with pytest.raises(TypeError):
        classify(None, "user")  # type: ignore[arg-type]
