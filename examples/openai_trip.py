"""The trip-planning agent loop against any OpenAI-compatible chat endpoint (not run in CI).

    export RETAIN_EXAMPLE_BASE_URL=http://127.0.0.1:8000/v1   # or https://api.openai.com/v1
    export RETAIN_EXAMPLE_MODEL=qwen2.5-7b-instruct             # a model that supports tool calls
    export RETAIN_EXAMPLE_API_KEY=...                            # optional: sent as a Bearer token
    python examples/openai_trip.py [--hashing]

``POST {base_url}/chat/completions`` with ``messages`` and ``tools`` (the OpenAI function-calling
shape), standard library only. Without the two required variables it exits with status 2 and says
which are missing; nothing is sent anywhere then.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from trip_agent import Message, Model, run_trip

from retain import Budget, HashingEncoder, Memory, MiniLMEncoder

REQUIRED = ("RETAIN_EXAMPLE_BASE_URL", "RETAIN_EXAMPLE_MODEL")


def endpoint_model(base_url: str, model: str, api_key: str | None, *, timeout: float = 120.0) -> Model:
    """A model callable over ``{base_url}/chat/completions``; raises SystemExit on an HTTP error."""
    url = base_url.rstrip("/") + "/chat/completions"

    def call(messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        body = json.dumps({"model": model, "messages": messages, "tools": tools, "temperature": 0}).encode()
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                data = json.loads(response.read())
        except (urllib.error.URLError, TimeoutError, json.JSONDecodeError) as exc:
            raise SystemExit(f"openai_trip: the endpoint {url} failed: {exc}") from exc
        message: Message = data["choices"][0]["message"]
        return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}

    return call


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hashing", action="store_true", help="use the hashing encoder (no MiniLM)")
    args = parser.parse_args(argv)
    env = dict(os.environ) if env is None else env
    missing = [name for name in REQUIRED if not env.get(name)]
    if missing:
        print(
            f"openai_trip: set {' and '.join(missing)} (an OpenAI-compatible endpoint and a model name "
            "that supports tool calls; RETAIN_EXAMPLE_API_KEY if it needs a key). Nothing was sent.",
            file=sys.stderr,
        )
        return 2
    model = endpoint_model(
        env["RETAIN_EXAMPLE_BASE_URL"], env["RETAIN_EXAMPLE_MODEL"], env.get("RETAIN_EXAMPLE_API_KEY")
    )
    encoder = HashingEncoder(384) if args.hashing else MiniLMEncoder()
    with Memory(encoder=encoder, budget=Budget(25)) as memory:
        result = run_trip(model, memory, log=print)
    print(f"\nfinal answer: {result.answer}\nspent per the ledger: {result.total_spent} EUR")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
