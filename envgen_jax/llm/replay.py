"""Designs replayed from a recorded run, whatever this run's feedback says (a study's `--replay METHOD=TRANSCRIPT`).

No LLM reaches a GPU machine, so a study there replays the designs an LLM method wrote in a study on the CPU
(benchmarks/results/study_cpu_v2/<method>/llm_transcript.jsonl). Unlike the `replay` backend
(llm/transcript.py), which reproduces a run exactly and stops at the first prompt that differs, this replay is
open-loop: the agent is another one, so its feedback differs, and the designs are replayed anyway.

What a replayed designer does, exactly (docs/studies.md, "Replayed designers"):
- Its request r (the designer's r-th design request: cycle by cycle, one per reply, as `llm.request_sampling`
  numbers them into each request's sampling seed) is answered with the reply the recorded run accepted for its
  request r. The prompt, and so the feedback in it (this agent's success rates, the earlier environments'
  results), is not read at all.
- A repair turn of request r (this run's checks found a problem or gave advice) gets the same reply again, so the
  design cannot drift from the recorded one: advice never fails a last try, and a reply that no longer parses (the
  schema changed since it was recorded) fails the design step with the problems named.
- A request beyond the recorded ones (more cycles, a larger pool, an extra turn the recorded run did not ask) is an
  error naming the transcript and how many requests it holds: never a guess or a scripted stand-in.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from envgen_jax.llm.errors import ReplayError
from envgen_jax.llm.transcript import read_transcript


def recorded_designs(path: str | Path) -> list[str]:
    """The reply the recorded run accepted for each of its requests, in request order (a request recorded twice, by a
    run resumed after its design step, counts once, with the reply accepted last, the one the run went on with)."""
    records = read_transcript(path)
    accepted = {r["request"]: r.get("reply") for r in records
                if r.get("event") == "exchange" and r.get("accepted") and r.get("reply") is not None}
    requests = sorted({r["request"] for r in records if r.get("event") == "design" and r.get("ok")})
    missing = [q for q in requests if q not in accepted]
    if missing:
        raise ReplayError(f"{path}: design requests {missing} succeeded but no accepted reply of theirs is recorded")
    if requests != list(range(len(requests))):
        raise ReplayError(f"{path}: its successful design requests are {requests}, not 0..{len(requests) - 1}: "
                          "a run whose design step failed cannot be replayed request by request")
    if not requests:
        raise ReplayError(f"{path} records no accepted design")
    return [accepted[q] for q in requests]


class DesignReplay:
    """An OpenAI-shaped client (`chat.completions.create(**kwargs)`) answering request r with recorded design r.

    `base_seed`: the run's `llm.transport.seed` (None: 0); the request is read from the sampling seed each request
    carries (base + 1000 x request + try, `llm.designer.request_sampling`)."""

    def __init__(self, path: str | Path, base_seed: int | None = None):
        self.path = Path(path)
        self.designs = recorded_designs(self.path)
        self.base_seed = base_seed or 0
        self.answered: list[tuple[int, int]] = []  # (request, try) of every call, in order
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **kwargs):
        from envgen_jax.llm.testing import completion

        if kwargs.get("seed") is None:
            raise ReplayError("a replayed designer needs each request's sampling seed to know which request it is")
        request, attempt = divmod(int(kwargs["seed"]) - self.base_seed, 1000)
        if not 0 <= request < len(self.designs):
            raise ReplayError(f"{self.path} holds {len(self.designs)} accepted designs (requests 0-"
                              f"{len(self.designs) - 1}) and this run asks for request {request}: the replayed run "
                              "asks more than the recorded one (more cycles, a larger pool or an extra turn)")
        self.answered.append((request, attempt))
        return completion(self.designs[request])


def replay_client(path: str | Path, llm_settings) -> DesignReplay:
    """The replaying client for a run with these `llm` settings (its sampling seed's base)."""
    return DesignReplay(path, llm_settings.transport.seed)
