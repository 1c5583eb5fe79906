"""A trip-planning agent loop on retain, shared by the two runnable examples.

The loop is what an agent builder writes: each user turn is remembered with the agent's task state
(``Memory.add_messages``), the prompt is packed by ``Memory.context(query, state=..., budget_tokens=...)``
under a small token budget, the model answers or calls a tool, and tool calls and results are
remembered too. A :class:`retain.ProcedureTracker` turns each completed plan (the subgoal stack
emptied after steps) into a procedure, found again by ``Memory.procedures(state)``.

The model is any callable ``model(messages, tools) -> message``: ``messages`` is the chat so far in
the OpenAI shape (``{"role", "content"}``), ``tools`` the tool schemas, and the returned message is
``{"role": "assistant", "content": str}`` or one with ``"tool_calls"``. ``scripted_trip.py`` passes a
scripted model (offline, deterministic); ``openai_trip.py`` one over any OpenAI-compatible endpoint.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from retain import AgentState, Memory

Message = dict[str, Any]
Model = Callable[[list[Message], list[dict[str, Any]]], Message]

SYSTEM = (
    "You are a trip-planning agent. Use the tools to search and book. Respect every constraint in "
    "the memory below; when asked for a summary, report the spend from the ledger against the budget."
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    }
    for name, description in (
        ("search_flights", "Search flights; query like 'LIS-OPO 2026-05-12'."),
        ("search_hotels", "Search hotels; query like 'Porto 12-15 May'."),
        ("book", "Book an offer by its code, e.g. 'TP1940' or 'RIBEIRA'."),
        ("ledger", "The spend ledger: everything booked so far and the total."),
    )
]

OFFERS = {
    "TP1940": ("flight TP1940 LIS-OPO 12 May 07:10", 89),
    "TP1952": ("flight TP1952 LIS-OPO 12 May 23:40 (red-eye)", 45),
    "RIBEIRA": ("Hotel Ribeira, 3 nights, lift", 285),
    "AZUL": ("Casa Azul, 3 nights, no lift, 4th floor", 210),
    "TASTING": ("port wine tasting 13 May", 35),
}


@dataclass
class Tools:
    """The fake travel tools: deterministic results, and the bookings made (the ledger)."""

    booked: list[str] = field(default_factory=list)

    def call(self, name: str, query: str) -> str:
        if name == "search_flights":
            return "Flights LIS-OPO 12 May: TP1940 07:10 89 EUR; TP1952 23:40 45 EUR (red-eye)."
        if name == "search_hotels":
            return "Hotels Porto 12-15 May: RIBEIRA 95 EUR/night, lift; AZUL 70 EUR/night, no lift, 4th floor."
        if name == "book":
            code = query.strip().upper()
            if code not in OFFERS:
                return f"Booking failed: no offer {code!r}."
            self.booked.append(code)
            what, price = OFFERS[code]
            return f"Booking confirmed: {what}, {price} EUR, reference R-{len(self.booked):03d}."
        if name == "ledger":
            lines = ", ".join(f"{OFFERS[c][0]} {OFFERS[c][1]} EUR" for c in self.booked) or "nothing booked"
            return f"Spend ledger: {lines}; total spent {self.total} EUR."
        return f"Unknown tool {name!r}."

    @property
    def total(self) -> int:
        return sum(OFFERS[c][1] for c in self.booked)


@dataclass(frozen=True)
class Turn:
    """One scripted user turn and the agent's task state while it is handled."""

    text: str
    phase: str
    subgoals: tuple[str, ...] = ()


CHATTER = ("ok", "Nice, thanks!", "Anything else left to book?", "cool", "sounds good", "great")


def trip_script() -> list[Turn]:
    """The user's side of a 59-turn trip (requirements -> flights -> hotels -> itinerary -> budget)."""
    turns = [
        Turn("I'm planning a trip from Lisbon to Porto, 12-15 May.", "requirements", ("collect requirements",)),
        Turn("Important: the total budget must stay under 900 EUR.", "requirements", ("collect requirements",)),
        Turn("No red-eye flights, please.", "requirements", ("collect requirements",)),
        Turn("I need a hotel with a lift; my knee is bad.", "requirements", ("collect requirements",)),
        Turn("That's all for the requirements.", "requirements", ()),
    ]
    legs = [
        ("flights", "book a flight", ["Find me a flight to Porto on 12 May.", "Book the morning one."]),
        ("hotels", "book a hotel", ["Now a hotel in Porto for the three nights.", "Book the one with the lift."]),
        ("itinerary", "plan the itinerary", ["Add a port wine tasting on 13 May.", "Book it."]),
    ]
    for phase, goal, asks in legs:
        for i, ask in enumerate(asks):
            turns.append(Turn(ask, phase, (goal,)))
            turns += [Turn(CHATTER[(i + j) % len(CHATTER)], phase, (goal,)) for j in range(7)]
        turns.append(Turn("Done with that.", phase, ()))
    while len(turns) < 58:
        turns.append(Turn(CHATTER[len(turns) % len(CHATTER)], "itinerary", ()))
    turns.append(Turn("Summarise what we spent against the budget.", "budget summary", ("summarise the budget",)))
    return turns


@dataclass
class TripResult:
    """What a run produced: the final answer, the last packed context and the procedures written."""

    answer: str
    context: str
    total_spent: int
    procedures: list[str]
    turns: int


def _state(turn: Turn, tools: Tools) -> AgentState:
    last = f"booked {', '.join(tools.booked)}" if tools.booked else None
    return AgentState(phase=turn.phase, subgoals=turn.subgoals, last_result=last)


def _ask(
    model: Model, memory: Memory, namespace: str, turn: Turn, state: AgentState, budget: int, rounds: list[Message]
) -> tuple[Message, str]:
    """One model call: the system prompt with the packed memory context, the user turn and this
    turn's tool calls and results so far."""
    ctx = memory.context(turn.text, namespace=namespace, state=state, budget_tokens=budget)
    messages = [
        {"role": "system", "content": f"{SYSTEM}\n\nMemory:\n{ctx.text}"},
        {"role": "user", "content": turn.text},
        *rounds,
    ]
    return model(messages, TOOLS), ctx.text


def run_trip(model: Model, memory: Memory, *, namespace: str = "trip", budget_tokens: int = 350,
             max_tool_rounds: int = 4, log: Callable[[str], None] | None = None) -> TripResult:  # fmt: skip
    """Run the scripted user through the agent loop with ``model``; returns the final answer."""
    tools, tracker = Tools(), memory.procedure_tracker(namespace)
    answer = ctx_text = ""
    written: list[str] = []
    turns = trip_script()
    for turn in turns:
        state = _state(turn, tools)
        memory.add_messages([{"role": "user", "content": turn.text}], namespace=namespace, state=state)
        rounds: list[Message] = []
        for _ in range(max_tool_rounds):
            reply, ctx_text = _ask(model, memory, namespace, turn, state, budget_tokens, rounds)
            calls = reply.get("tool_calls") or []
            if not calls:
                answer = str(reply.get("content") or "")
                memory.add_messages([{"role": "assistant", "content": answer or "(no answer)"}],
                                    namespace=namespace, state=state)  # fmt: skip
                break
            remembered: list[Message] = [{"role": "assistant", "content": None, "tool_calls": calls}]
            for call in calls:
                name, args = call["function"]["name"], json.loads(call["function"].get("arguments") or "{}")
                result = tools.call(name, str(args.get("query", "")))
                remembered.append(
                    {"role": "tool", "tool_call_id": call.get("id", name), "name": name, "content": result}
                )
                if log:
                    log(f"  tool {name}({args.get('query', '')}) -> {result}")
            state = _state(turn, tools)
            memory.add_messages(remembered, namespace=namespace, state=state)
            rounds += remembered
        step = turn.text if turn.subgoals and turn.text not in CHATTER else None
        done = tracker.observe(state, step=step)  # the plan's steps: the turns that asked for work
        if done:
            written.append(done)
        if log:
            log(f"[{turn.phase}] user: {turn.text}\n  agent: {answer}")
    return TripResult(answer, ctx_text, tools.total, written, len(turns))


def recalled(memory: Memory, namespace: str, phase: str, subgoal: str) -> Sequence[str]:
    """The steps of the stored procedure closest to a new state (for the next trip's agent)."""
    found = memory.procedures({"phase": phase, "subgoals": [subgoal]}, namespace=namespace, k=1)
    return found[0].steps if found else ()
