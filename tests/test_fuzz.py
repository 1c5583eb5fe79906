"""The public API under property-based fuzzing (issue 21, point 4), bounded for CI: every call
returns or raises retain's own error, and no record is lost. The long run is
``python benchmarks/fuzz_api.py --minutes 10``."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api_fuzz import Tally, drive


def _seed(mem: object) -> None:
    from retain import Memory

    assert isinstance(mem, Memory)
    mem.add("Never book flights before 9am.", namespace="ns", type="hard_constraint")
    mem.add("I prefer window seats.", namespace="ns", segment="s1", seq=0)
    mem.add("The hotel in Lisbon is booked for Friday.", namespace="ns", segment="s1", seq=1)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.data())
def test_public_api_raises_only_retain_errors_and_loses_nothing(data: st.DataObject) -> None:
    tally = Tally()
    drive(data, steps=6, tally=tally, seed_records=_seed)
    assert tally.foreign == {}
    assert tally.lost == []
