"""The JSONL transcript of every LLM exchange, and the backend that replays one.

Records (one JSON object per line, appended and flushed as they happen):
  {"event": "exchange", "call", "request", "try", "kind", "mode", "messages", "reply", "finish_reason", "usage",
   "latency_s", "configs", "purposes", "problems", "accepted"}   one answered request and what validation made of it
  {"event": "error", "call", "attempt", "mode", "messages", "error": {"kind", "status", "message"}}   a failed request
  {"event": "design", "request", "kind", "ok", "replies", "repairs", "problems"}   the outcome of generate/feedback
Replay walks the "exchange" and "error" records in order and insists the run asks exactly what was asked then.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from envgen_jax.llm.client import ChatReply
from envgen_jax.llm.errors import ReplayError, RequestRefused, TransientLLMError

CALL_EVENTS = ("exchange", "error")


class Transcript:
    """Append-only JSONL log; a None path records nothing."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, record: dict) -> None:
        if self.path is None:
            return
        line = json.dumps({"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                           **record}, default=str, ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as f:  # reopened per record: a crash loses at most one line
            f.write(line + "\n")


def read_transcript(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.is_file():
        raise ReplayError(f"transcript {path} does not exist")
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ReplayError(f"{path}:{number} is not a JSON record ({e})") from None
    return records


def _first_difference(recorded: list[dict], asked: list[dict]) -> str:
    for i, (a, b) in enumerate(zip(recorded, asked)):
        if a != b:
            ra, rb = str(a.get("content", a))[:120], str(b.get("content", b))[:120]
            return f"message {i} ({b.get('role')}) differs: recorded {ra!r}... vs now {rb!r}..."
    return f"the recorded request has {len(recorded)} messages, this run sends {len(asked)}"


# Settings added after older transcripts were recorded that change what a run asks: the likeliest cause of a replay
# that diverges or asks for more calls than were recorded.
SETTINGS_HINT = ("; a transcript recorded before llm.distinct (on by default since issue 45: a reply that repeats an "
                 "environment is asked again) replays with --set llm.distinct=false, and the run's other llm.* "
                 "settings must be the recorded run's")


class ReplayBackend:
    """Answers from a transcript, in order; diverging or running out is an error, never a guess."""

    replays = True

    def __init__(self, path: str | Path, skip: int = 0):
        self.path = Path(path)
        self.records = [r for r in read_transcript(path) if r.get("event") in CALL_EVENTS]
        self.position = skip
        self.description = f"replay of {self.path}"

    def send(self, messages: list[dict], mode: str, schema: dict, sampling: Any = None) -> ChatReply:
        if self.position >= len(self.records):
            raise ReplayError(f"{self.path} holds {len(self.records)} recorded LLM calls and this run asks for call "
                              f"#{self.position + 1}: the replayed run goes further than the recorded one"
                              f"{SETTINGS_HINT}")
        record: dict[str, Any] = self.records[self.position]
        self.position += 1
        where = f"{self.path}, call #{self.position}"
        if record.get("mode") != mode:
            raise ReplayError(f"replay diverged at {where}: recorded output mode {record.get('mode')!r}, "
                              f"this run asks for {mode!r}")
        if record.get("messages") != messages:
            raise ReplayError(f"replay diverged at {where}: "
                              f"{_first_difference(record.get('messages') or [], messages)}{SETTINGS_HINT}")
        if record["event"] == "error":
            err = record.get("error") or {}
            cls = TransientLLMError if err.get("kind") == "transient" else RequestRefused
            raise cls(err.get("message", "recorded error"), err.get("status"))
        return ChatReply(text=record.get("reply", ""), finish_reason=record.get("finish_reason"),
                         usage=record.get("usage"), latency_s=0.0)
