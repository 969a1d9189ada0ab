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

import json
import time
from pathlib import Path
from typing import Any, Callable, Container, Mapping, NamedTuple, Sequence

from envgen_jax.llm.client import MODES, ChatBackend, LLMClient, OpenAIBackend, Sampling, make_openai_client
from envgen_jax.llm.errors import DesignError, LLMError
from envgen_jax.llm.local_server import LocalServer
from envgen_jax.llm.prompts import (analysis_prompt, feedback_prompt, focus_prompt, focus_skills, generation_prompt,
                                    in_words, next_prompt, output_schema, repair_prompt, repeats_prompt,
                                    unserved_prompt, weakest_quarter, written_prompt)
from envgen_jax.llm.reply import environment_entry, parse_reply
from envgen_jax.llm.settings import LLMSettings, Strategy, Transport
from envgen_jax.llm.spec import EnvSpec
from envgen_jax.llm.targeting import TargetMap
from envgen_jax.llm.transcript import ReplayBackend, Transcript

STATE_VERSION = 1
MAX_ECHO_CHARS = 4000  # an invalid reply is echoed back for repair at most this long, to spare the context window


class Design(NamedTuple):
    configs: list      # validated config objects (e.g. CrafterConfig), exactly as many as asked
    purposes: list     # the model's free-text purpose of each; informational only, never parsed
    # (the targets each environment named, llm.targets, are the designer's `targets` after the call)


class Designer:
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
        self._client_override = client
        self._sleep = sleep
        self._llm: LLMClient | None = None
        self.server: LocalServer | None = None
        self.messages: list[dict] = []   # the conversation: accepted turns only (user, assistant, user, ...)
        self.configs: list = []          # the last accepted design
        self.purposes: list[str] = []
        self.targets: list[list[str]] = []  # the last accepted design's targets (llm.targets)
        self.history: list[list] = []    # every accepted design, oldest first (repeats of any are sent back)
        self.requests = 0                # generate/feedback calls that succeeded
        self._mode: str | None = None    # structured-output mode learned so far (restored on resume)
        self._calls = 0                  # backend calls so far (a replay resumes after them)

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
                            earlier=[*self.history, previous] if given else None, weak=self.unserved_skills(success),
                            focus=self.focus_skills(success))

    def focus_skills(self, success: Mapping[str, Any]) -> list[str]:
        """The skills a feedback design's environments are asked for, one each in turn (llm.strategy.focus
        "weakest": the weakest quarter, weakest first; "none": none). benchmarks/designer_quality.py's variants
        override it with ideas measured and not adopted (the lagging skills only)."""
        return weakest_quarter(self.spec, success) if self.strategy.focus == "weakest" else []

    def unserved_skills(self, success: Mapping[str, Any]) -> Sequence[str]:
        """Weak skills to ask one environment again for, targets first, when no environment of the design serves
        them: none. A variant of benchmarks/designer_quality.py (`unserved: targets_first`, measured and not
        adopted) overrides it."""
        return ()

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
                "requests": self.requests, "mode": self._llm.mode if self._llm else self._mode,
                "calls": self._llm.calls if self._llm else self._calls}

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
        designer._mode, designer._calls = state.get("mode"), int(state.get("calls", 0))
        return designer

    def close(self) -> None:
        """Stop the local server, if one was started. The designer stays usable: the next call reconnects."""
        if self._llm is not None:
            self._mode, self._calls = self._llm.mode, self._llm.calls
            self._llm = None
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> "Designer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------------------------

    def _client(self) -> LLMClient:
        if self._llm is None:
            backend, self.server = make_backend(self.settings.transport, self._client_override, self._calls)
            self._llm = LLMClient(backend, self.settings.transport, mode=self._mode, sleep=self._sleep,
                                  on_error=self.transcript.write, calls=self._calls)
        return self._llm

    def _design(self, prompt: str, n: int, kind: str, per_reply: int | None = None,
                base: list[dict] | None = None, earlier: list[list] | None = None, weak: Sequence[str] = (),
                focus: Sequence[str] = ()) -> Design:
        """n validated environments, asked `per_reply` at a time (all at once by default); the conversation and the
        designer's state change only once all n are accepted. `base`: the conversation the turn continues (None:
        the designer's; [] starts a new one, llm.conversation "fresh"). `earlier`: the designs an environment must
        not repeat (llm.distinct; None: every design accepted so far). `weak`: weak skills to ask one environment
        again for when no environment serves one of them (`unserved_skills`).
        `focus`: the skills llm.focus asks the design's environments for, one each in turn (feedback turns only).

        A few per reply (llm.envs_per_reply): each reply is asked on its own branch from the conversation so far,
        the turn's prompt followed by the environments already written, in words, and which to write now; the
        conversation then keeps the turn's prompt and one reply holding the whole design. The 1.5B model copied
        the configuration of its own previous reply when the replies followed each other in the conversation."""
        per = min(per_reply or n, n)
        focus = focus_skills(focus, n)
        configs, purposes, targets, analysis = [], [], [], ""
        base = self.messages if base is None else base
        earlier = self.history if earlier is None else earlier
        conversation = base
        replies = -(-n // per)
        for part, first in enumerate(range(0, n, per)):
            count = min(per, n - first)
            reuse = first > 0 and self.strategy.analysis == "first_reply" and bool(analysis)
            text = prompt if first == 0 else "\n\n".join(
                [prompt, written_prompt(configs, targets), *([analysis_prompt(analysis)] if reuse else []),
                 next_prompt(first + 1, first + count, n)])
            if focus:  # llm.focus: this reply's environments, one weak skill each
                text += "\n\n" + focus_prompt(focus[first:first + count], first + 1, first + count, n,
                                               self.spec.skills)
            parsed, conversation = answer_turn(self, base, text, count, kind, self.requests + part, configs,
                                               with_analysis=not reuse, earlier=earlier)
            configs += parsed.configs
            purposes += parsed.purposes
            targets += [list(t) for t in parsed.targets]
            analysis = analysis or parsed.analysis
        slot, missing = unserved_slot(configs, weak, self.spec.targeting) if weak else (None, [])
        if slot is not None:  # one environment again, for the weak skills left out (`unserved_skills`)
            keep = [i for i in range(n) if i != slot]
            configs, purposes, targets = ([xs[i] for i in keep] for xs in (configs, purposes, targets))
            text = "\n\n".join([prompt, written_prompt(configs, targets),
                                 *([analysis_prompt(analysis)] if analysis else []),
                                 unserved_prompt(missing, n, n, self.spec.skills)])
            parsed, _ = answer_turn(self, base, text, 1, kind, self.requests + replies, configs, with_analysis=False,
                                    earlier=earlier, names=tuple(missing))
            configs += parsed.configs
            purposes += parsed.purposes
            targets += [list(t) for t in parsed.targets]
            replies += 1
        if per < n or slot is not None:  # the turn, answered by the whole design
            whole = {"analysis": analysis, "environments": [
                environment_entry(p, c.to_dict(only_changed=True), t) for t, p, c in zip(targets, purposes, configs)]}
            conversation = [*base, {"role": "user", "content": prompt},
                            {"role": "assistant", "content": json.dumps(whole)}]
        self.messages, self.configs, self.purposes, self.targets = conversation, configs, purposes, targets
        self.history.append(list(configs))
        self.requests += replies
        return Design(list(configs), list(purposes))



def answer_turn(d: Designer, conversation: list[dict], prompt: str, n: int, kind: str, request: int,
                written: Sequence[Any] = (), with_analysis: bool = True, earlier: Sequence[Sequence[Any]] = (),
                names: tuple[str, ...] | None = None):
    """Designer `d`'s one user turn answered with n valid environments, repairs included: (the parsed reply, the conversation
    with the turn and the accepted reply). `written`: environments of this design accepted in earlier turns;
    `with_analysis` False: the reply writes no analysis (its prompt holds the design's, llm.analysis);
    `earlier`: the designs its environments must not repeat (llm.distinct); `names`: the achievements its
    environments name as targets first (None: the game's with llm.targets, else none)."""
    cls_ = d.spec.config_cls
    if names is None:
        names = d.spec.achievements if d.strategy.targets else ()
    schema = output_schema(cls_, n, names, changes_only=d.strategy.only_changes, analysis=with_analysis)
    llm = d._client()
    messages = [*conversation, {"role": "user", "content": prompt}]
    parsed, reasks = None, 0
    for attempt in range(d.strategy.max_repairs + 1):
        sampling = request_sampling(d.settings, attempt, request)
        reply = llm.complete(messages, schema, sampling)
        parsed = parse_reply(reply.text, cls_, n, reply.finish_reason, d.spec.check, names)
        repeats = (repeated_environments(parsed.configs, written, earlier)
                   if parsed.ok and d.strategy.distinct else {})
        advice = (design_advice(parsed.configs, parsed.purposes, d.history, d.strategy.advice,
                                parsed.targets, written, d.spec.targeting, skip=repeats) if parsed.ok else [])
        last_try = attempt == d.strategy.max_repairs
        # neither a repeat nor advice fails a step: what the last try still holds is used, and recorded
        accepted = parsed.ok and (not (advice or repeats) or last_try)
        d.transcript.write({"event": "exchange", "call": llm.calls - 1, "request": request, "kind": kind,
                            **_exchange(attempt, llm, sampling, messages, reply, parsed, advice, repeats, accepted)})
        if accepted:
            # Failed tries and repair turns stay in the transcript but not in the conversation: later cycles
            # see a clean history, and small local models keep their context for what matters.
            d.transcript.write({"event": "design", "request": request, "kind": kind, "ok": True,
                                   "replies": attempt + 1, "repairs": attempt, "reasks": reasks, "problems": [],
                                   "advice_left": advice, "repeats_left": [r for _, r in repeats.values()]})
            return parsed, [*conversation, {"role": "user", "content": prompt},
                            {"role": "assistant", "content": reply.text}]
        if attempt < d.strategy.max_repairs and repeats:
            # Asked again on a fresh branch, the repeats named in words and the reply not echoed (the 1.5B model
            # answered an echoed reply with the same configuration), with the next seed (`request_sampling`).
            reasks += 1
            named = [f"{in_words(config)} ({what})" for config, what in repeats.values()]
            messages = [*conversation, {"role": "user", "content": "\n\n".join(
                [prompt, repeats_prompt(named + advice)])}]
        elif attempt < d.strategy.max_repairs:
            echo = reply.text if len(reply.text) <= MAX_ECHO_CHARS else reply.text[:MAX_ECHO_CHARS] + " ...(cut)"
            messages = [*messages, {"role": "assistant", "content": echo or "(empty reply)"},
                        {"role": "user", "content": repair_prompt(list(parsed.problems) or advice, n)}]
    replies = d.strategy.max_repairs + 1
    d.transcript.write({"event": "design", "request": request, "kind": kind, "ok": False, "replies": replies,
                           "repairs": replies - 1, "problems": list(parsed.problems)})
    raise DesignError(parsed.problems, replies=replies,
                      transcript=str(d.transcript.path) if d.transcript.path else None)


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LLMError(f"the number of environments must be a positive integer, got {n!r}")
    return n


def make_backend(s: Transport, client: Any = None, calls: int = 0) -> tuple[ChatBackend, LocalServer | None]:
    """The chat backend `s` names, and the local server it started (or None). `client`: an injected
    `.chat.completions.create` object used instead; `calls`: backend calls already made (a replay skips them)."""
    kind = s.resolved_backend()
    if client is not None:
        return OpenAIBackend(client, s.model or "local", s, "the injected LLM client"), None
    if kind == "replay":
        return ReplayBackend(s.replay_path, skip=calls), None
    if kind == "local":
        model = s.local_model
        server = LocalServer(s.gguf_path, model=None if s.gguf_path else model, n_ctx=s.n_ctx,
                             n_threads=s.n_threads, startup_timeout_s=s.startup_timeout_s, alias=model).start()
        try:
            client = make_openai_client(s, base_url=server.base_url, api_key="local")
        except BaseException:
            server.stop()  # nothing would stop it later
            raise
        # llama.cpp's own request field: keep (or drop) the slot's cache of the conversation so far
        return OpenAIBackend(client, model, s, f"the local LLM server ({model}) at {server.base_url}",
                             extra_body={"cache_prompt": s.prompt_cache}), server
    if not s.model:
        raise LLMError("the openai backend needs a model name (--model or llm.transport.model), e.g. gpt-4o-mini")
    client = make_openai_client(s)
    return OpenAIBackend(client, s.model, s, f"the LLM endpoint {client.base_url} (model {s.model})"), None


def _exchange(attempt, llm, sampling, messages, reply, parsed, advice, repeats, accepted) -> dict:
    """The rest of one try's transcript record: what was sent, the reply and what became of it."""
    return {"try": attempt, "mode": llm.mode, "temperature": sampling.temperature, "seed": sampling.seed,
            "messages": messages, "reply": reply.text, "finish_reason": reply.finish_reason,
            "usage": reply.usage, "latency_s": round(reply.latency_s, 4),
            "configs": [c.to_dict() for c in parsed.configs] if parsed.ok else None,
            "purposes": list(parsed.purposes) if parsed.ok else None,
            "targets": [list(t) for t in parsed.targets] if parsed.ok else None, "analysis": parsed.analysis,
            "problems": list(parsed.problems), "advice": advice,
            "repeats": [r for _, r in repeats.values()], "accepted": accepted}


def request_sampling(s: LLMSettings, attempt: int, request: int) -> Sampling:
    """Each request samples with its own seed (llm.seed + 1000 x the requests before it + the try), so a later
    cycle cannot replay an earlier one's tokens while a rerun asks exactly the same; repair turns sample at
    llm.repair_temperature (None: llm.temperature)."""
    t, repair = s.transport, s.strategy.repair_temperature
    seed = (t.seed or 0) + 1000 * request + attempt
    return Sampling(t.temperature if attempt == 0 or repair is None else repair, seed)


def repeated_environments(configs: Sequence[Any], written: Sequence[Any] = (),
                          earlier_designs: Sequence[Sequence[Any]] = ()) -> dict[int, tuple[Any, str]]:
    """llm.distinct: index -> (config, what it repeats) for each environment of a reply equal to another of the reply,
    to one `written` earlier in the same design (llm.envs_per_reply), or to one of `earlier_designs` (oldest first).
    Equal means the same validated configuration (every setting, defaults filled in), whatever the reply's text."""
    out = {}
    for i, config in enumerate(configs):
        first, before, earlier = _repeat_of(i, configs, written, earlier_designs)
        if first is not None:
            out[i] = config, f"written twice in one answer (environments {first + 1} and {i + 1})"
        elif before is not None:
            out[i] = config, f"the same as environment {before + 1} of this design, which you already wrote"
        elif earlier is not None:
            k, j = earlier
            when = "the last design" if k == len(earlier_designs) - 1 else f"design number {k + 1}"
            out[i] = config, f"the same as environment {j + 1} of {when}, which the agent already trained in"
    return out


def _repeat_of(i: int, configs: Sequence[Any], written: Sequence[Any], earlier_designs: Sequence[Sequence[Any]]):
    """Where configs[i] was already: (index of an equal one before it in the reply, index in `written`, (design,
    index) in `earlier_designs`), each None if nowhere."""
    config = configs[i]
    first = next((j for j in range(i) if configs[j] == config), None)
    before = next((j for j, old in enumerate(written) if old == config), None)
    earlier = next(((k, j) for k, design in enumerate(earlier_designs) for j, old in enumerate(design)
                    if old == config), None)
    return first, before, earlier


def unserved_slot(configs: Sequence[Any], weak: Sequence[str], target_map: TargetMap | None
                  ) -> tuple[int | None, list[str]]:
    """llm.unserved "targets_first": (the environment to ask again, the weak skills no environment helps), or
    (None, ...) when every weak skill is served or every environment is the only one serving one of them. The one
    asked again is the last whose weak skills another environment also serves (first those serving none)."""
    if not weak or target_map is None:
        return None, []
    served = [{w for w in weak if target_map.helps(c, [w])} for c in configs]
    missing = [w for w in weak if not any(w in s for s in served)]
    if not missing:
        return None, []
    spare = [i for i, s in enumerate(served) if s <= set().union(*(served[:i] + served[i + 1:]))]
    if not spare:
        return None, missing
    empty = [i for i in spare if not served[i]]
    return (empty or spare)[-1], missing


def design_advice(configs: Sequence[Any], purposes: Sequence[str], earlier_designs: Sequence[Sequence[Any]] = (),
                  checks: str = "all", targets: Sequence[Sequence[str]] = (), written: Sequence[Any] = (),
                  target_map: TargetMap | None = None, skip: Container[int] = ()) -> list[str]:
    """Valid designs that waste a slot: environments that repeat another, repeat one the agent already trained in
    (any of `earlier_designs`, oldest first), change nothing, name targets their settings give nothing for
    (`targets`, llm.targets; `TargetMap.helps`), or, without targets, do not do what their purpose says (a purpose
    that promises a wood pickaxe must give one; `TargetMap.purpose_problems`, a word heuristic: an environment that
    names its targets is held to those instead). Both use the game's `target_map` (EnvSpec.targeting): without
    one, neither is checked. They go back for repair like
    invalid ones, but a design still holding them after the last repair is used (and the advice recorded): quality
    problems must not stop a run, and the heuristics must never overrule the LLM for good. `checks`: "all",
    "duplicates" (repeated or unchanged environments only) or "none" (LLMSettings.advice). `written`: environments
    of the same design accepted in earlier replies (llm.envs_per_reply), which a new one must not repeat either.
    `skip`: environments already named as repeats (llm.distinct, `repeated_environments`)."""
    advice = []
    if checks == "none":
        return advice
    for i, config in enumerate(configs):
        if i in skip:
            continue
        first, before, earlier = _repeat_of(i, configs, written, earlier_designs)
        if first is not None:
            advice.append(f"environments[{i}].config is the same as environments[{first}].config; make every "
                          f"environment different, each aimed at its own skills")
        elif before is not None:
            advice.append(f"environments[{i}].config is the same as environment {before + 1}, which you already wrote "
                          f"in this design; make every environment different, each aimed at its own skills")
        elif config == type(config).original():
            advice.append(f"environments[{i}].config changes nothing (it is the original game); change the settings "
                          f"that serve its purpose")
        elif checks == "duplicates":
            continue
        elif earlier is not None:
            k, j = earlier
            when = "your last design" if k == len(earlier_designs) - 1 else f"your design number {k + 1}"
            advice.append(f"environments[{i}].config repeats environment {j + 1} of {when}, which the agent already "
                          f"trained in; design a new one for the skills it still lacks")
        elif target_map is None:
            continue
        elif i < len(targets) and targets[i]:  # the targets it names are checked, not its purpose's words
            unserved = [t for t in targets[i] if not target_map.helps(config, [t])]
            if unserved:
                settings = sorted({lever.name for t in unserved for lever in target_map.levers(t)})
                advice.append(f"environments[{i}] targets {', '.join(unserved)}, but its config changes nothing that "
                              f"helps {'it' if len(unserved) == 1 else 'them'}; change settings for those targets "
                              f"(for example {', '.join(settings)}) or target what the config serves")
        else:
            problems = target_map.purpose_problems(purposes[i] if i < len(purposes) else "", config) or []
            advice += [f"environments[{i}]: the purpose does not match the config: {p}" for p in problems]
    return advice
