"""The LLM environment designer: EnvGen steps 1 (generate) and 4 (feedback) as one continuing conversation, or
with each feedback call in a fresh one (llm.conversation).

    spec = games.get("crafter").designer_spec()   # the game's view, built by the game (envgen_jax.games)
    with Designer(spec, LLMSettings(), "runs/x/llm_transcript.jsonl") as designer:
        configs, purposes = designer.generate(4)
        ...train...
        configs, purposes = designer.feedback({"collect_coal": (38.0, 6.0), ...}, 4)
        state = designer.state_dict()          # checkpoint with the run
    designer = Designer.from_state(state, settings, transcript_path, env=spec)   # resume after an LLM step

A design call either returns exactly n validated configurations or raises: `DesignError` when the model's replies
stayed invalid after `max_repairs` repair turns, `LLMError` when the endpoint failed. Neither changes the
conversation, so the caller's checkpoint stays consistent and the step can simply be retried later.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from envgen_jax.llm.client import MODES
from envgen_jax.llm.errors import LLMError
from envgen_jax.llm.local_server import LocalServer
from envgen_jax.llm.prompts import (analysis_prompt, feedback_prompt, focus_prompt, generation_prompt, next_prompt,
                                    weakest_quarter, written_prompt)
from envgen_jax.llm.reply import environment_entry
from envgen_jax.llm.settings import LLMSettings, Strategy
from envgen_jax.llm.spec import EnvSpec
from envgen_jax.llm.transcript import Transcript
from envgen_jax.llm.turn import (Turn, design_advice, make_backend, repeated_environments,  # noqa: F401 (also
                                 request_sampling)  # importable from here, where they lived)

STATE_VERSION = 1


class Design(NamedTuple):
    configs: list      # validated config objects (e.g. CrafterConfig), exactly as many as asked
    purposes: list     # the model's free-text purpose of each; informational only, never parsed
    # (the targets each environment named, llm.targets, are the designer's `targets` after the call)


@dataclasses.dataclass
class Draft:
    """A design asked for and not yet accepted: what `Designer.revise` sees and may change."""

    prompt: str                    # the turn's prompt
    n: int                         # environments asked for
    kind: str                      # "generate", "feedback" or the caller's label
    base: list[dict]               # the conversation the turn continues
    earlier: list[list]            # the designs an environment must not repeat (llm.distinct)
    success: Mapping[str, Any] | None  # the feedback it answers (None: generate, ask)
    configs: list
    purposes: list[str]
    targets: list[list[str]]
    analysis: str
    replies: int                   # requests it took (each its own seed)


class Designer:
    """The designer's conversation: `generate`, `feedback` and `ask` each ask for a design and keep it (the
    conversation, the last design with its purposes and targets, every design so far); `state_dict` and
    `from_state` carry it across a resume. Asking one turn is its `turn`'s (`turn.Turn`)."""

    def __init__(self, env: EnvSpec, settings: LLMSettings | None = None,
                 transcript_path: str | Path | None = None, *, client: Any = None,
                 sleep: Callable[[float], None] = time.sleep):
        """`env`: the game as the designer sees it, built by the game (`games.get(name).designer_spec(env)`).
        `client`: an object with `.chat.completions.create` (e.g. `openai.OpenAI`) to use instead of the backend
        named in `settings`; tests inject fakes here."""
        if not isinstance(env, EnvSpec):
            raise TypeError(f"Designer needs the game's EnvSpec (envgen_jax.games.get(name).designer_spec()), "
                            f"got {env!r}")
        self.spec = env
        self.settings = settings or LLMSettings()
        self.strategy: Strategy = self.settings.strategy  # how it asks; the transport goes to the client alone
        self.transcript = Transcript(transcript_path)
        self.turn = Turn(env, self.settings, self.transcript, client, sleep)
        self.messages: list[dict] = []   # the conversation: accepted turns only (user, assistant, user, ...)
        self.configs: list = []          # the last accepted design
        self.purposes: list[str] = []
        self.targets: list[list[str]] = []  # the last accepted design's targets (llm.targets)
        self.history: list[list] = []    # every accepted design, oldest first (repeats of any are sent back)
        self.requests = 0                # generate/feedback calls that succeeded

    # -- public API -------------------------------------------------------------------------------------------

    def generate(self, n: int = 4) -> Design:
        """Ask for n environments. Starts the conversation, or continues it if one exists."""
        per = self.strategy.envs_per_reply
        return self._design(generation_prompt(self.spec, _check_n(n), self.strategy, per), n, "generate", per)

    def feedback(self, success: Mapping[str, Any], n: int = 4, previous: Sequence[Any] | None = None,
                 notes: Sequence[str] | None = None,
                 inside: Sequence[Mapping[str, float | None] | None] | None = None,
                 previous_targets: Sequence[Sequence[str]] | None = None) -> Design:
        """Report per-achievement success (name -> (mean %, std %) or mean %) and ask for n new environments.

        `previous`: the configurations the agent trained in; defaults to the last accepted design (then shown with
        its targets; `previous_targets` gives the targets of a `previous` passed in). `notes`: one line per previous
        configuration, shown after it (envgen_sfl: its measured learnability). `inside`: per previous configuration,
        the agent's success (%) per achievement inside it, as the run measured it (shown with llm.history
        "summary"). With no conversation yet (e.g. a resumed run without state), the generation prompt is sent first
        in the same turn.
        """
        targets = self.targets if previous is None else previous_targets
        given = previous is not None and list(previous) not in self.history  # e.g. `llm generate --previous`
        previous = list(self.configs if previous is None else previous)
        per = self.strategy.envs_per_reply
        fresh = self.strategy.conversation == "fresh"  # a new conversation: earlier designs only as `history` has them
        prompt = feedback_prompt(self.spec, success, previous, _check_n(n),
                                 with_generation=fresh or not self.messages, notes=notes, settings=self.strategy,
                                 targets=targets, inside=inside, per_reply=per, earlier=self.history if fresh else ())
        return self._design(prompt, n, "feedback", per, base=[] if fresh else None,
                            earlier=[*self.history, previous] if given else None, success=success)

    def focus_skills(self, success: Mapping[str, Any]) -> list[str]:
        """The skills a feedback design's environments are asked for, one each in turn (llm.strategy.focus
        "weakest": the weakest quarter, weakest first; "none": none). benchmarks/designer_quality.py's variants
        override it with ideas measured and not adopted (the lagging skills only)."""
        return weakest_quarter(self.spec, success) if self.strategy.focus == "weakest" else []

    def revise(self, draft: Draft) -> Draft:
        """The one hook for variants of the designer that only a benchmark runs (benchmarks/designer_quality.py):
        they may ask again for some of a design's environments (`turn.answer`) before it is accepted, counting
        each reply asked in `draft.replies`. The designer itself keeps the draft as it is."""
        return draft

    def ask(self, prompt: str, n: int = 4, kind: str = "custom") -> Design:
        """Send any user turn (e.g. a curriculum's prompt) and get n validated environments, with the same
        structured output, validation, repairs, transcript and replay as `generate`, llm.envs_per_reply at a time.
        `kind` labels the transcript. The prompt must itself describe the output format
        (`prompts.output_format(spec, n, strategy, strategy.envs_per_reply)`)."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise LLMError("the designer's prompt must be non-empty text")
        return self._design(prompt, _check_n(n), kind, self.strategy.envs_per_reply)

    def state_dict(self) -> dict:
        """JSON-serialisable conversation state (no secrets, no settings)."""
        return {"version": STATE_VERSION, "env": self.spec.name, "messages": [dict(m) for m in self.messages],
                "configs": [c.to_dict() for c in self.configs], "purposes": list(self.purposes),
                "targets": [list(t) for t in self.targets],
                "history": [[c.to_dict() for c in design] for design in self.history],
                "requests": self.requests, "mode": self.turn.mode, "calls": self.turn.calls}

    @classmethod
    def from_state(cls, state: Mapping[str, Any], settings: LLMSettings | None = None,
                   transcript_path: str | Path | None = None, *, env: EnvSpec, client: Any = None,
                   sleep: Callable[[float], None] = time.sleep) -> "Designer":
        """A designer that goes on with the conversation in `state` (`state_dict()`), for the same game (`env`)."""
        if not isinstance(state, Mapping) or state.get("version") != STATE_VERSION:
            raise LLMError(f"not a designer state of version {STATE_VERSION}: "
                           f"{state.get('version') if isinstance(state, Mapping) else type(state).__name__}")
        designer = cls(env, settings, transcript_path, client=client, sleep=sleep)
        if designer.spec.name != state["env"]:
            raise LLMError(f"the state belongs to {state['env']!r}, not {designer.spec.name!r}")
        if state.get("mode") is not None and state["mode"] not in MODES:
            raise LLMError(f"designer state: unknown output mode {state['mode']!r}")
        designer.messages = [{"role": m["role"], "content": m["content"]} for m in state["messages"]]
        cls_ = designer.spec.config_cls
        designer.configs = [cls_.from_dict(c, where=f"state.configs[{i}]") for i, c in enumerate(state["configs"])]
        designer.purposes = list(state["purposes"])
        designer.targets = [list(t) for t in state.get("targets", [])]  # states saved before targets: none
        designer.history = ([[cls_.from_dict(c, where=f"state.history[{k}]") for c in design]
                             for k, design in enumerate(state["history"])] if "history" in state
                            else [list(designer.configs)] if designer.configs else [])
        designer.requests = int(state["requests"])
        designer.turn = Turn(designer.spec, designer.settings, designer.transcript, client, sleep,
                             mode=state.get("mode"), calls=int(state.get("calls", 0)))
        return designer

    def close(self) -> None:
        """Stop the local server, if one was started. The designer stays usable: the next call reconnects."""
        self.turn.close()

    @property
    def server(self) -> LocalServer | None:
        """The local LLM server the turn started (None: none running)."""
        return self.turn.server

    def __enter__(self) -> "Designer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------------------------

    def _design(self, prompt: str, n: int, kind: str, per_reply: int | None = None,
                base: list[dict] | None = None, earlier: list[list] | None = None,
                success: Mapping[str, Any] | None = None) -> Design:
        """n validated environments, asked `per_reply` at a time (all at once by default); the conversation and the
        designer's state change only once all n are accepted. `base`: the conversation the turn continues (None:
        the designer's; [] starts a new one, llm.conversation "fresh"). `earlier`: the designs an environment must
        not repeat (llm.distinct; None: every design accepted so far). `success`: the feedback a feedback design
        answers (its `focus_skills`: one skill each for the design's environments, in turn).

        A few per reply (llm.envs_per_reply): each reply is asked on its own branch from the conversation so far,
        the turn's prompt followed by the environments already written, in words, and which to write now; the
        conversation then keeps the turn's prompt and one reply holding the whole design. The 1.5B model copied
        the configuration of its own previous reply when the replies followed each other in the conversation."""
        per = min(per_reply or n, n)
        weak = self.focus_skills(success) if success is not None else []
        focus = [weak[i % len(weak)] for i in range(n)] if weak else []  # round again when n is larger
        base = self.messages if base is None else base
        draft = Draft(prompt, n, kind, base, self.history if earlier is None else earlier, success, [], [], [], "",
                      -(-n // per))
        conversation = base
        for part, first in enumerate(range(0, n, per)):
            count = min(per, n - first)
            reuse = first > 0 and self.strategy.analysis == "first_reply" and bool(draft.analysis)
            text = prompt if first == 0 else "\n\n".join(
                [prompt, written_prompt(draft.configs, draft.targets),
                 *([analysis_prompt(draft.analysis)] if reuse else []), next_prompt(first + 1, first + count, n)])
            if focus:  # llm.focus: this reply's environments, one weak skill each
                text += "\n\n" + focus_prompt(focus[first:first + count], first + 1, first + count, n,
                                               self.spec.skills)
            parsed, conversation = self.turn.answer(base, text, count, kind, self.requests + part, self.history,
                                                    draft.configs, with_analysis=not reuse, earlier=draft.earlier)
            draft.configs += parsed.configs
            draft.purposes += parsed.purposes
            draft.targets += [list(t) for t in parsed.targets]
            draft.analysis = draft.analysis or parsed.analysis
        replies = draft.replies
        draft = self.revise(draft)
        if per < n or draft.replies != replies:  # the turn, answered by the whole design
            whole = {"analysis": draft.analysis, "environments": [
                environment_entry(p, c.to_dict(only_changed=True), t)
                for t, p, c in zip(draft.targets, draft.purposes, draft.configs)]}
            conversation = [*base, {"role": "user", "content": prompt},
                            {"role": "assistant", "content": json.dumps(whole)}]
        self.messages, self.configs, self.purposes, self.targets = (conversation, draft.configs, draft.purposes,
                                                                    draft.targets)
        self.history.append(list(draft.configs))
        self.requests += draft.replies
        return Design(list(draft.configs), list(draft.purposes))


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LLMError(f"the number of environments must be a positive integer, got {n!r}")
    return n
