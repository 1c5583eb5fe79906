"""OpenAIJudge against a scripted local HTTP stub (http.server on 127.0.0.1)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import numpy as np
import pytest

from retain.config import MemoryConfig
from retain.encoders.basis import HashingEncoder
from retain.errors import InvalidInput
from retain.ingest.conflict import Relation
from retain.ingest.judge import OpenAIJudge
from retain.memory import Memory
from retain.record import MemoryRecord, new_id

NS = "judge"


class _Script:
    replies: ClassVar[list[tuple[int, str, float]]] = []  # (status, body, delay seconds) per request
    seen: ClassVar[list[dict[str, object]]] = []


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        _Script.seen.append({"path": self.path, "body": json.loads(self.rfile.read(length))})
        status, body, delay = _Script.replies.pop(0) if _Script.replies else (500, "no script", 0.0)
        time.sleep(delay)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode("utf-8"))
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Script.replies, _Script.seen = [], []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def answer(text: str) -> tuple[int, str, float]:
    return 200, json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}), 0.0


def rec(text: str) -> MemoryRecord:
    return MemoryRecord(id=new_id(), namespace=NS, content=text, embedding=np.ones(4, np.float32))


def test_yes_and_no_are_read_and_the_request_is_chat_completions_with_scrubbed_text(stub: str) -> None:
    judge = OpenAIJudge(stub, "local-model", api_key="k")
    _Script.replies = [answer("Yes."), answer("no")]
    old, new = rec("Budget is 2,000."), rec("Budget is 2,600 now. My card is 4111 1111 1111 1111.")
    assert judge.confirm(new, old, Relation.UPDATE) is True
    assert judge.confirm(new, old, Relation.UPDATE) is False
    sent = _Script.seen[0]
    assert sent["path"] == "/v1/chat/completions"
    body = sent["body"]
    assert isinstance(body, dict) and body["model"] == "local-model"
    assert "4111 1111 1111 1111" not in json.dumps(body) and "2,600" in json.dumps(body)
    assert judge.failures == 0


@pytest.mark.parametrize(
    "reply",
    [(200, "not json at all", 0.0), (200, json.dumps({"choices": []}), 0.0), answer("perhaps"), (503, "{}", 0.0)],
)
def test_garbage_or_errors_leave_the_decision_standing_and_are_logged(
    stub: str, reply: tuple[int, str, float], caplog: pytest.LogCaptureFixture
) -> None:
    judge = OpenAIJudge(stub, "m")
    _Script.replies = [reply]
    with caplog.at_level(logging.WARNING, logger="retain.judge"):
        assert judge.confirm(rec("b"), rec("a"), Relation.UPDATE) is True
    assert judge.failures == 1 and "decision stands" in caplog.text


def test_a_timeout_through_memory_add_keeps_the_update_and_loses_nothing(stub: str) -> None:
    judge = OpenAIJudge(stub, "m", timeout=0.2)
    _Script.replies = [(200, "{}", 1.0)] * 4
    with Memory(encoder=HashingEncoder(64), config=MemoryConfig(conflict_judge=judge)) as m:
        old = m.add("I have worked at Acme for 5 years.", namespace=NS)
        new = m.add("Correction: I have worked at Acme for 6 years.", namespace=NS)
        assert m.get(old, namespace=NS).superseded_by == new
        assert len(m.records(namespace=NS, include_superseded=True)) == 2
    assert judge.failures >= 1


def test_a_judge_veto_through_memory_add_keeps_the_old_record(stub: str) -> None:
    judge = OpenAIJudge(stub, "m")
    _Script.replies = [answer("no")] * 4
    with Memory(encoder=HashingEncoder(64), config=MemoryConfig(conflict_judge=judge)) as m:
        old = m.add("I have worked at Acme for 5 years.", namespace=NS)
        m.add("Correction: I have worked at Acme for 6 years.", namespace=NS)
        assert m.get(old, namespace=NS).is_current
    assert _Script.seen


def test_bad_settings_are_refused() -> None:
    with pytest.raises(InvalidInput):
        OpenAIJudge("ftp://x", "m")
    with pytest.raises(InvalidInput):
        OpenAIJudge("http://127.0.0.1:1/v1", " ")
    with pytest.raises(InvalidInput):
        OpenAIJudge("http://127.0.0.1:1/v1", "m", timeout=0)
