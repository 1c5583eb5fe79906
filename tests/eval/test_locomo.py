import json
from datetime import UTC, datetime

import pytest

from retain.config import Settings
from retain.encoders.basis import HashingEncoder
from retain.errors import DatasetUnavailable
from retain.eval.datasets import load_locomo, parse_evidence, parse_locomo_date, resolve_locomo
from retain.eval.locomo import run_locomo


def _conversation(sample_id="conv-x"):
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey kitten called Miso."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "What colour is Miso?"},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "Grey with white paws.", "blip_caption": "a kitten"},
            ],
            "session_2_date_time": "10:00 am on 1 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "I started pottery classes on Monday."},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "Pottery sounds relaxing!"},
            ],
            "session_3_date_time": "9:00 am on 2 July, 2023",  # quirk: a date without a session
        },
        "qa": [
            {"question": "What is the name of Ana's kitten?", "answer": "Miso", "evidence": ["D1:1"], "category": 4},
            {"question": "When did Ben start pottery?", "answer": 2023, "evidence": ["D2:1; D1:3"], "category": 2},
            {"question": "Bad evidence", "answer": "x", "evidence": ["D", "D:11:26", "D9:9"], "category": 1},
            {"question": "Adversarial", "adversarial_answer": "no", "evidence": ["D1:02"], "category": 5},
        ],
    }


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([_conversation("a"), _conversation("b")]), encoding="utf-8")
    return path


def test_parse_evidence_handles_quirks():
    assert parse_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert parse_evidence(["D30:05"]) == ["D30:5"]
    assert parse_evidence(["D", "D:11:26"]) == []
    assert parse_evidence("D1:2 D1:3") == ["D1:2", "D1:3"]


def test_parse_locomo_date():
    assert parse_locomo_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_locomo_date("not a date") is None
    assert parse_locomo_date(None) is None


def test_load_locomo_quirks(locomo_file):
    conv = load_locomo(locomo_file)[0]
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conv.turns[2].caption == "a kitten"
    assert conv.turns[3].session_time == datetime(2023, 6, 1, 10, 0, tzinfo=UTC)
    q = conv.questions
    assert q[1].evidence == ("D2:1", "D1:3") and q[1].answer == "2023"
    assert q[2].evidence == () and q[2].unresolved_evidence == ("D9:9",)
    assert q[3].answer == "no" and q[3].evidence == ("D1:2",)


def test_resolve_prefers_explicit_path_and_refuses_missing(tmp_path, locomo_file):
    assert resolve_locomo(locomo_file) == locomo_file
    with pytest.raises(DatasetUnavailable):
        resolve_locomo(tmp_path / "missing.json")
    env = Settings(locomo_path=tmp_path / "nope.json")
    with pytest.raises(DatasetUnavailable, match="RETAIN_LOCOMO"):
        resolve_locomo(None, settings=env)


def test_load_rejects_non_list(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DatasetUnavailable):
        load_locomo(path)


def test_run_locomo_reports_every_field(locomo_file):
    conversations = load_locomo(locomo_file)
    report = run_locomo(conversations, lambda: HashingEncoder(64), loco=True, progress=False)
    assert report["conversations"] == 2 and report["questions"] == 8
    retrievers = [r["retriever"] for r in report["runs"]]
    assert retrievers == ["learned", "learned-loco", "rrf"]
    first = report["runs"][0]
    for key in (
        "policy",
        "budget",
        "recall@5",
        "recall@10",
        "hit@5",
        "hit@10",
        "mrr",
        "by_category",
        "ingest_turns_per_s",
        "search_ms_p50",
        "search_ms_p95",
    ):
        assert key in first, key
    # 5 turns per conversation: every evidence turn is within the top 10
    assert first["recall@10"] == 1.0
    assert first["skipped_no_evidence"] == 2  # the "Bad evidence" question of each conversation
    assert set(first["by_category"]) == {"2", "4", "5"}


def test_window_recall_counts_the_neighbours_of_each_hit():
    import numpy as np

    from retain.eval.locomo import QuestionPool, window_recall

    def pool(category, evidence):
        return QuestionPool("c", category, evidence, [], np.zeros((0, 14)), np.zeros(0))

    pools = [pool(1, ("D1:3", "D2:9")), pool(2, ("D1:5",)), pool(5, ("D1:1",))]
    rankings = [["D1:2", "D3:1"], ["D1:3"], ["D1:1"]]
    out = window_recall(pools, rankings, window=1, k=1)
    assert out["by_category"] == {"1": 0.5, "2": 0.0, "5": 1.0}  # D1:2 covers D1:1-3; D1:3 covers D1:2-4
    assert out["recall@1_units"] == 0.25  # headline: categories 1-4 only
    assert window_recall(pools, rankings, window=2, k=1)["by_category"]["2"] == 1.0


def test_run_locomo_replays_into_a_given_store_and_refuses_one_already_holding_the_conversation(locomo_file, tmp_path):
    from retain import Memory
    from retain.errors import InvalidInput

    conversations = load_locomo(locomo_file)
    path = str(tmp_path / "locomo.db")
    on_file = run_locomo(conversations, lambda: HashingEncoder(64), loco=False, progress=False, location=path)
    in_memory = run_locomo(conversations, lambda: HashingEncoder(64), loco=False, progress=False)
    assert [r["recall@10"] for r in on_file["runs"]] == [r["recall@10"] for r in in_memory["runs"]]
    with Memory(path, encoder=HashingEncoder(64)) as mem:
        stored = {ns: len(mem.records(namespace=ns)) for ns in mem.store.namespaces()}
    assert stored == {f"locomo-{c.sample_id}": 5 for c in conversations}
    with pytest.raises(InvalidInput, match="already holds records"):
        run_locomo(conversations, lambda: HashingEncoder(64), loco=False, progress=False, location=path)
    with Memory(path, encoder=HashingEncoder(64)) as mem:
        assert {ns: len(mem.records(namespace=ns)) for ns in mem.store.namespaces()} == stored  # nothing added


def test_run_locomo_on_postgres_gives_the_figures_of_sqlite(locomo_file):
    """The LoCoMo evaluation replayed into a Postgres store (a schema of its own) gives every ranking
    figure of the in-memory SQLite run (the learned fusion sees one score scale on both stores)."""
    import uuid
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    from postgres_server import postgres_url

    schema = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    parts = urlsplit(postgres_url())
    option = f"options=-csearch_path%3D{schema},public"
    url = urlunsplit(parts._replace(query=f"{parts.query}&{option}" if parts.query else option))
    conversations = load_locomo(locomo_file)
    on_pg = run_locomo(conversations, lambda: HashingEncoder(64), loco=True, progress=False, location=url)
    in_memory = run_locomo(conversations, lambda: HashingEncoder(64), loco=True, progress=False)
    keys = ("recall@5", "recall@10", "hit@5", "hit@10", "mrr", "by_category")
    assert [r["retriever"] for r in on_pg["runs"]] == [r["retriever"] for r in in_memory["runs"]]
    for pg, lite in zip(on_pg["runs"], in_memory["runs"], strict=True):
        assert {k: pg[k] for k in keys} == {k: lite[k] for k in keys}, pg["retriever"]
    with psycopg.connect(postgres_url(), autocommit=True) as conn:
        stored = conn.execute(f'SELECT count(*) FROM "{schema}".records').fetchone()[0]
    assert stored == 10  # the replay went into Postgres, 5 turns of each conversation
