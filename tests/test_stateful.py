"""Memory against a plain model (issue 21, point 4): a hypothesis state machine adds, updates,
deletes, searches and overflows a FIFO budget, and after every step the store holds exactly what
the model says: the current records and their contents, the hot (dynamic) ones in FIFO order, the
archived ones; and a lexical search for a current record's unique word finds it."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from retain import Budget, HashingEncoder, Memory, MemoryConfig
from retain.store import RecordFilter

CAPACITY = 3
WORDS = [f"topic{i:02d}" for i in range(60)]


class MemoryModel(RuleBasedStateMachine):
    """The model: current id -> content; hot ids oldest first (FIFO budget of CAPACITY); archived ids."""

    def __init__(self) -> None:
        super().__init__()
        config = MemoryConfig(supersede=False, merge_paraphrases=False)
        self.mem = Memory(
            encoder=HashingEncoder(dim=64), config=config, budget=Budget(CAPACITY, policy="fifo"), state_scorer=False
        )
        self.current: dict[str, str] = {}
        self.hot: list[str] = []
        self.archived: set[str] = set()
        self.unused = list(WORDS)

    def teardown(self) -> None:
        self.mem.close()

    def _admit(self, rid: str) -> None:
        self.hot.append(rid)
        while len(self.hot) > CAPACITY:
            self.archived.add(self.hot.pop(0))

    @precondition(lambda self: bool(self.unused))
    @rule(data=st.data())
    def add(self, data: st.DataObject) -> None:
        word = data.draw(st.sampled_from(self.unused))
        self.unused.remove(word)
        content = f"Note about {word} for the trip."
        rid = self.mem.add(content, namespace="ns", type="fact")
        assert rid not in self.current
        self.current[rid] = content
        self._admit(rid)

    @precondition(lambda self: bool(self.current))
    @rule(data=st.data())
    def add_again(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.current)))
        if rid in self.archived:  # added again out of the archive: restored to the hot memory
            self.archived.discard(rid)
            assert self.mem.add(self.current[rid], namespace="ns", type="fact") == rid
            self._admit(rid)
        elif rid in self.hot:
            assert self.mem.add(self.current[rid], namespace="ns", type="fact") == rid

    @precondition(lambda self: bool(self.current) and bool(self.unused))
    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.current)))
        word = self.unused.pop()
        content = f"Revised note about {word}."
        new = self.mem.update(rid, content, namespace="ns")
        del self.current[rid]
        if rid in self.hot:
            self.hot.remove(rid)
        self.archived.discard(rid)
        self.current[new] = content
        self._admit(new)

    @precondition(lambda self: bool(self.current))
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.current)))
        assert self.mem.delete(rid, namespace="ns") >= 1
        del self.current[rid]
        if rid in self.hot:
            self.hot.remove(rid)
        self.archived.discard(rid)

    @precondition(lambda self: bool(self.current))
    @rule(data=st.data())
    def search(self, data: st.DataObject) -> None:
        rid = data.draw(st.sampled_from(sorted(self.current)))
        word = next(w for w in self.current[rid].replace(".", " ").split() if w.startswith("topic"))
        tiers = ["core", "dynamic", "archive"]
        hits = self.mem.search(word, namespace="ns", config="lexical", tiers=tiers, k=5)
        assert rid in [h.record.id for h in hits]
        hot_hits = self.mem.search(word, namespace="ns", config="lexical", k=5)
        assert (rid in [h.record.id for h in hot_hits]) == (rid in self.hot)

    @invariant()
    def store_matches_model(self) -> None:
        stored = self.mem.store.list_records("ns", RecordFilter(tiers=None))
        assert {r.id: r.content for r in stored} == self.current
        assert [r.id for r in stored if r.tier.value == "dynamic"] == sorted(
            self.hot, key=lambda i: [r.id for r in stored].index(i)
        )
        assert set(self.hot) == {r.id for r in stored if r.tier.value == "dynamic"}
        assert self.archived == {r.id for r in stored if r.tier.value == "archive"}
        assert len(self.hot) <= CAPACITY


MemoryModel.TestCase.settings = settings(
    max_examples=25, stateful_step_count=15, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
TestMemoryModel = MemoryModel.TestCase


def _hot(mem: Memory) -> list[str]:
    return [r.id for r in mem.store.list_records("ns", RecordFilter())]


def test_restored_record_keeps_its_fifo_place_through_a_rebuild() -> None:
    """The shrunk case of the stateful failure: a record added again out of the archive enters
    the hot memory at the back; the hot set rebuilt after an update (or a delete) must keep it
    there, so the next add evicts the oldest entry, not the restored record."""
    config = MemoryConfig(supersede=False, merge_paraphrases=False)
    budget = Budget(3, policy="fifo")
    with Memory(encoder=HashingEncoder(dim=64), config=config, budget=budget, state_scorer=False) as mem:
        a, _b, c, d = (mem.add(f"Note about topic{w} for the trip.", namespace="ns", type="fact") for w in "abcd")
        assert a not in _hot(mem)
        assert mem.add("Note about topica for the trip.", namespace="ns", type="fact") == a  # restored
        assert set(_hot(mem)) == {c, d, a}
        c2 = mem.update(c, "Revised note about topicz.", namespace="ns")  # rebuilds the hot set
        e = mem.add("Note about topice for the trip.", namespace="ns", type="fact")
        assert set(_hot(mem)) == {a, c2, e}  # d, the oldest entry, left; not the restored a
        mem.delete(e, namespace="ns")  # rebuilds again
        f = mem.add("Note about topicf for the trip.", namespace="ns", type="fact")
        g = mem.add("Note about topicg for the trip.", namespace="ns", type="fact")
        assert set(_hot(mem)) == {c2, f, g}
