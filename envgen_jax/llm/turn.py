"""One turn of the designer's conversation: a user turn answered with n valid environments. `Turn` holds what
asking takes (the client and its backend, each try's sampling, the repair turns, the transcript); the conversation
itself (what was asked and accepted, the designs so far) is `designer.Designer`'s.

    turn = Turn(spec, settings, transcript)
    parsed, conversation = turn.answer(messages, prompt, n, "generate", request=0, history=[])
    turn.close()      # stops a local server it started; the next answer reconnects
"""

from __future__ import annotations

import time
from typing import Any, Callable, Container, Sequence

from envgen_jax.llm.client import ChatBackend, LLMClient, OpenAIBackend, Sampling, make_openai_client
from envgen_jax.llm.errors import DesignError, LLMError
from envgen_jax.llm.local_server import LocalServer
from envgen_jax.llm.prompts import in_words, output_schema, repair_prompt, repeats_prompt
from envgen_jax.llm.reply import parse_reply
from envgen_jax.llm.settings import LLMSettings, Transport
from envgen_jax.llm.spec import EnvSpec
from envgen_jax.llm.targeting import TargetMap
from envgen_jax.llm.transcript import ReplayBackend, Transcript

MAX_ECHO_CHARS = 4000  # an invalid reply is echoed back for repair at most this long, to spare the context window


class Turn:
    """Asks the model one turn at a time: its client (made on first use: the backend `settings` names, or an
    injected `client`), the structured-output mode learned and the backend calls made (both carried in the
    designer's state, `mode` and `calls`), and every try written to the transcript."""

    def __init__(self, spec: EnvSpec, settings: LLMSettings, transcript: Transcript, client: Any = None,
                 sleep: Callable[[float], None] = time.sleep, mode: str | None = None, calls: int = 0):
        self.spec, self.settings, self.strategy, self.transcript = spec, settings, settings.strategy, transcript
        self._client_override, self._sleep = client, sleep
        self._llm: LLMClient | None = None
        self.server: LocalServer | None = None
        self._mode, self._calls = mode, calls

    @property
    def mode(self) -> str | None:
        """The structured-output mode learned so far (None: not yet)."""
        return self._llm.mode if self._llm else self._mode

    @property
    def calls(self) -> int:
        """Backend calls so far (a replay resumes after them)."""
        return self._llm.calls if self._llm else self._calls

    def client(self) -> LLMClient:
        if self._llm is None:
            backend, self.server = make_backend(self.settings.transport, self._client_override, self._calls)
            self._llm = LLMClient(backend, self.settings.transport, mode=self._mode, sleep=self._sleep,
                                  on_error=self.transcript.write, calls=self._calls)
        return self._llm

    def close(self) -> None:
        """Stop the local server, if one was started; the next answer reconnects."""
        if self._llm is not None:
            self._mode, self._calls = self._llm.mode, self._llm.calls
            self._llm = None
        if self.server is not None:
            self.server.stop()
            self.server = None

    def answer(self, conversation: list[dict], prompt: str, n: int, kind: str, request: int,
               history: Sequence[Sequence[Any]], written: Sequence[Any] = (), with_analysis: bool = True,
               earlier: Sequence[Sequence[Any]] = (), names: tuple[str, ...] | None = None):
        """One user turn answered with n valid environments, repairs included: (the parsed reply, the
        conversation with the turn and the accepted reply). `history`: the designs accepted so far (advice on
        repeats); `written`: environments of this design accepted in earlier turns; `with_analysis` False: the
        reply writes no analysis (its prompt holds the design's, llm.analysis); `earlier`: the designs its
        environments must not repeat (llm.distinct); `names`: the achievements its environments name as targets
        first (None: the game's with llm.targets, else none)."""
        cls_ = self.spec.config_cls
        if names is None:
            names = self.spec.achievements if self.strategy.targets else ()
        schema = output_schema(cls_, n, names, changes_only=self.strategy.only_changes, analysis=with_analysis)
        llm = self.client()
        messages = [*conversation, {"role": "user", "content": prompt}]
        parsed, reasks = None, 0
        for attempt in range(self.strategy.max_repairs + 1):
            sampling = request_sampling(self.settings, attempt, request)
            reply = llm.complete(messages, schema, sampling)
            parsed = parse_reply(reply.text, cls_, n, reply.finish_reason, self.spec.check, names)
            repeats = (repeated_environments(parsed.configs, written, earlier)
                       if parsed.ok and self.strategy.distinct else {})
            advice = (design_advice(parsed.configs, parsed.purposes, history, self.strategy.advice,
                                    parsed.targets, written, self.spec.targeting, skip=repeats) if parsed.ok else [])
            last_try = attempt == self.strategy.max_repairs
            # neither a repeat nor advice fails a step: what the last try still holds is used, and recorded
            accepted = parsed.ok and (not (advice or repeats) or last_try)
            exchange = _exchange(attempt, llm, sampling, messages, reply, parsed, advice, repeats, accepted)
            self.transcript.write({"event": "exchange", "call": llm.calls - 1, "request": request, "kind": kind,
                                   **exchange})
            if accepted:
                # Failed tries and repair turns stay in the transcript but not in the conversation: later cycles
                # see a clean history, and small local models keep their context for what matters.
                self.transcript.write({"event": "design", "request": request, "kind": kind, "ok": True,
                                       "replies": attempt + 1, "repairs": attempt, "reasks": reasks, "problems": [],
                                       "advice_left": advice, "repeats_left": [r for _, r in repeats.values()]})
                return parsed, [*conversation, {"role": "user", "content": prompt},
                                {"role": "assistant", "content": reply.text}]
            if attempt < self.strategy.max_repairs and repeats:
                # Asked again on a fresh branch, the repeats named in words and the reply not echoed (the 1.5B model
                # answered an echoed reply with the same configuration), with the next seed (`request_sampling`).
                reasks += 1
                named = [f"{in_words(config)} ({what})" for config, what in repeats.values()]
                messages = [*conversation, {"role": "user", "content": "\n\n".join(
                    [prompt, repeats_prompt(named + advice)])}]
            elif attempt < self.strategy.max_repairs:
                echo = reply.text if len(reply.text) <= MAX_ECHO_CHARS else reply.text[:MAX_ECHO_CHARS] + " ...(cut)"
                messages = [*messages, {"role": "assistant", "content": echo or "(empty reply)"},
                            {"role": "user", "content": repair_prompt(list(parsed.problems) or advice, n)}]
        replies = self.strategy.max_repairs + 1
        self.transcript.write({"event": "design", "request": request, "kind": kind, "ok": False, "replies": replies,
                               "repairs": replies - 1, "problems": list(parsed.problems)})
        raise DesignError(parsed.problems, replies=replies,
                          transcript=str(self.transcript.path) if self.transcript.path else None)


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
