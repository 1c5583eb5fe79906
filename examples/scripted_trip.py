"""The trip-planning agent loop with a scripted model: offline, deterministic, a few seconds.

    python examples/scripted_trip.py            # MiniLM (offline, from the local model cache)
    python examples/scripted_trip.py --hashing  # the hashing encoder: no model at all

The scripted model stands in for an LLM: it calls the tools a turn asks for, and for the final
budget summary it reads the spend ledger and the budget from the memory context retain packed
(capacity 25 records, 350 tokens), so the answer is right only if the context carried them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trip_agent import Message, TripResult, recalled, run_trip

from retain import Budget, HashingEncoder, Memory, MiniLMEncoder

_ACTIONS = {
    "Find me a flight to Porto on 12 May.": ("search_flights", "LIS-OPO 2026-05-12"),
    "Book the morning one.": ("book", "TP1940"),
    "Now a hotel in Porto for the three nights.": ("search_hotels", "Porto 12-15 May"),
    "Book the one with the lift.": ("book", "RIBEIRA"),
    "Book it.": ("book", "TASTING"),
    "Summarise what we spent against the budget.": ("ledger", "all"),
}


def scripted_model(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
    """A deterministic stand-in for an LLM over the OpenAI message shape."""
    system, user = messages[0]["content"], messages[1]["content"]
    answered = [m["content"] for m in messages[2:] if m["role"] == "tool"]
    if user in _ACTIONS and not answered:
        name, query = _ACTIONS[user]
        call = {"id": f"call-{name}", "type": "function",
                "function": {"name": name, "arguments": json.dumps({"query": query})}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    if answered and not user.startswith("Summarise"):
        return {"role": "assistant", "content": f"Done: {answered[-1]}"}
    if user.startswith("Summarise"):
        system = "\n".join([system, *answered])  # what the model sees: the memory context and this turn's results
        spent = re.findall(r"total spent (\d+) EUR", system)
        budget = re.search(r"budget must stay under (\d+) EUR", system)
        if not spent or not budget:
            return {"role": "assistant", "content": "I cannot find the ledger or the budget in my memory."}
        total, limit = int(spent[-1]), int(budget.group(1))
        verdict = "within" if total <= limit else "over"
        refs = sorted(set(re.findall(r"reference (R-\d+)", messages[0]["content"])))  # remembered, not this turn's
        return {
            "role": "assistant",
            "content": f"Spent {total} EUR of the {limit} EUR budget: {verdict} budget. "
            f"Bookings remembered: {', '.join(refs) or 'none'}.",
        }
    return {"role": "assistant", "content": "Noted."}


def main(argv: list[str] | None = None) -> TripResult:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hashing", action="store_true", help="use the hashing encoder (no model)")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    encoder = HashingEncoder(384) if args.hashing else MiniLMEncoder()
    with Memory(encoder=encoder, budget=Budget(25)) as memory:
        result = run_trip(scripted_model, memory, log=None if args.quiet else print)
        print(f"\n{result.turns} turns; final answer: {result.answer}")
        print(f"procedures written: {len(result.procedures)}; the next trip's hotel plan would start from: "
              f"{list(recalled(memory, 'trip', 'hotels', 'book a hotel'))}")  # fmt: skip
    return result


if __name__ == "__main__":
    main()
