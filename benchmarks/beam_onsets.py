"""Where BEAM's event-ordering evidence sits: the analysis behind the ordering retrieval's limits.

For every ``event_ordering`` question of the given chats, the gold turns (``source_chat_ids``) are
placed in the chat's structure and compared with what an LLM-free retrieval can see. Prints:

* the structure: batches (the memory's sessions) and turn groups per chat; the share of gold user
  turns that open a turn group (``question_type == "main_question"``, read from chat.json for this
  analysis only: the memory never sees it) against the share among all user turns; gold turns that
  are the first user turn of their session; the position of gold turns among their session's user
  turns;
* per question: items listed, the count stated in the question ("Mention ONLY and ONLY five
  items"), sessions holding gold turns, sessions in the chat;
* the rank of each gold turn among its session's user turns by the fused score of a topic search
  (``ordering_topic``, pool of 400, as ``search(order="time")`` would rank them);
* TextTiling onsets (:mod:`tiling`, over the session's user turns and over all its turns):
  the share of gold user turns that start an episode against the share of all user turns.

    python benchmarks/beam_onsets.py --data ../shared/data/beam/100K [--chats 1,2]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
from tiling import topic_boundaries

from retain.encoders.basis import MiniLMEncoder
from retain.eval.beam import BEAM_CHAT_FILES, load_beam
from retain.eval.beam_runner import BEAM_CONFIG, ORDERED_CATEGORY, beam_stream
from retain.eval.streams import EVIDENCE_KEY, CachingEncoder
from retain.memory import Memory
from retain.sequence.episodes import ASKER_ROLE, ordering_topic

_COUNT = re.compile(r"\bONLY\s+and\s+ONLY\s+(\w+)\s+items?\b", re.IGNORECASE)
_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}


def _question_types(folder: Path) -> dict[str, str | None]:
    """message id -> BEAM's ``question_type`` (user turns; None for replies), from the raw chat file."""
    path = next(folder / name for name in BEAM_CHAT_FILES if (folder / name).exists())
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {str(m["id"]): m.get("question_type") for batch in raw for group in batch["turns"] for m in group}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="BEAM tier folder (e.g. ../shared/data/beam/100K)")
    parser.add_argument("--chats", default=None, help="only these chats, e.g. 1,2")
    args = parser.parse_args()
    chats = load_beam(args.data, args.chats.split(",") if args.chats else None)
    encoder = CachingEncoder(MiniLMEncoder())
    users = opening = gold_opening = gold_first = 0
    gold_total, positions, ranks = 0, [], []
    onsets: dict[str, list[int]] = {"user turns": [0, 0, 0, 0], "all turns": [0, 0, 0, 0]}
    print("chat  items  stated  sessions-with-gold / sessions")
    for chat in chats:
        types = _question_types(Path(args.data) / chat.chat_id)
        stream = beam_stream(chat)
        ns = f"beam-{chat.chat_id}"
        with Memory(":memory:", encoder=encoder, config=BEAM_CONFIG) as mem:
            for batch in stream.batches:
                for item in batch:
                    mem.add_many([item], namespace=ns, actor="eval")
            records = mem.records(namespace=ns, include_superseded=True)
            sessions: dict[str | None, list] = {}
            for r in records:
                sessions.setdefault(r.segment, []).append(r)
            gold = {str(e) for q in chat.questions if q.category == ORDERED_CATEGORY for e in q.evidence}
            for turns in sessions.values():
                turns.sort(key=lambda r: r.seq)
                own = [r for r in turns if r.role == ASKER_ROLE]
                for i, r in enumerate(own):
                    eid = str(r.metadata.get(EVIDENCE_KEY))
                    users += 1
                    opening += types.get(eid) == "main_question"
                    if eid in gold:
                        gold_total += 1
                        gold_opening += types.get(eid) == "main_question"
                        gold_first += i == 0
                        positions.append(i / max(len(own) - 1, 1))
                for name, seq in (("user turns", own), ("all turns", turns)):
                    starts = {0, *topic_boundaries(np.stack([r.embedding for r in seq]))} if seq else set()
                    for i, r in enumerate(seq):
                        if r.role != ASKER_ROLE:
                            continue
                        is_gold = str(r.metadata.get(EVIDENCE_KEY)) in gold
                        onsets[name][0] += i in starts
                        onsets[name][1] += 1
                        onsets[name][2] += is_gold and i in starts
                        onsets[name][3] += is_gold
            by_eid = {str(r.metadata.get(EVIDENCE_KEY)): r for r in records}
            for q in stream.questions:
                if q.category != ORDERED_CATEGORY or len(q.order) < 2:
                    continue
                found = _COUNT.search(q.text)
                stated = _WORDS.get(found.group(1).lower()) if found else None
                held = {by_eid[e].segment for e in q.evidence if e in by_eid}
                print(f"{chat.chat_id:>4}  {len(q.order):>5}  {stated!s:>6}  {len(held)} / {len(sessions)}")
                pool = mem.search(ordering_topic(q.text), namespace=ns, k=400, allow_raw=True, include_superseded=True)
                score = {h.record.id: h.score for h in pool}
                for e in q.evidence:
                    r = by_eid.get(e)
                    if r is None:
                        continue
                    own = [t for t in sessions[r.segment] if t.role == ASKER_ROLE]
                    ranked = sorted(own, key=lambda t: -score.get(t.id, 0.0))
                    ranks.append([t.id for t in ranked].index(r.id))
    rank = np.array(ranks)
    print(f"user turns {users}; opening a turn group {opening} ({opening / max(users, 1):.2f})")
    share = gold_opening / max(gold_total, 1)
    print(f"gold user turns {gold_total}; opening a turn group {gold_opening} ({share:.2f}); "
          f"first user turn of their session {gold_first}; position among the session's user turns "
          f"(0 first, 1 last) quartiles {np.round(np.percentile(positions, [25, 50, 75]), 2).tolist()}")  # fmt: skip
    print(f"gold turn's rank among its session's user turns by fused score (n={len(rank)}): "
          f"1st {np.mean(rank < 1):.2f}, top 2 {np.mean(rank < 2):.2f}, top 3 {np.mean(rank < 3):.2f}, "
          f"top 5 {np.mean(rank < 5):.2f}, "
          f"median {np.median(rank) + 1:.0f}")  # fmt: skip
    for name, (on, n, gold_on, n_gold) in onsets.items():
        print(f"TextTiling over {name}: episode onsets among all user turns {on / max(n, 1):.2f}, "
              f"among gold user turns {gold_on / max(n_gold, 1):.2f} (n={n_gold})")  # fmt: skip


if __name__ == "__main__":
    main()
