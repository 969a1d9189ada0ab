"""The LLM designer's settings, in two declared sections: `Transport`, how to reach a model (backend, model,
endpoint, time-outs, retries, sampling, the local server), and `Strategy`, how to ask it (one environment per reply,
a fresh conversation, the weak skills' needs and levers, repairs). `LLMSettings` holds both, read from a run
configuration's `llm:` mapping: the transport's settings directly under it (`llm.model`, `llm.temperature`; also
accepted as an `llm.transport:` section) and the strategy's in `llm.strategy:`. A strategy key written flat, as
before the split (`llm.focus`), still reads; given both ways with two values it is refused, naming both paths.

The strategy's defaults are the designer the bundled configs run (docs/designer.md), so `envgen-jax llm generate`, a
run and a study ask alike unless a config says otherwise; an idea measured and not adopted is no setting here but a
variant of the benchmark that measured it (benchmarks/designer_quality.py).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Literal, Mapping, get_args

from envgen_jax.config_io import from_mapping, load_yaml, move_old_keys, renamed
from envgen_jax.llm.models import DEFAULT_OFFLINE_MODEL, OFFLINE_MODELS
from envgen_jax.schema import ConfigError, Declared, bounded

Backend = Literal["auto", "openai", "local", "replay"]
OutputMode = Literal["auto", "json_schema", "json_object", "text"]
Advice = Literal["all", "duplicates", "none"]
History = Literal["summary", "json"]
Conversation = Literal["continued", "fresh"]
Analysis = Literal["each_reply", "first_reply"]
Focus = Literal["none", "weakest"]
BACKENDS, OUTPUT_MODES, ADVICE = get_args(Backend), get_args(OutputMode), get_args(Advice)


@dataclasses.dataclass(frozen=True)
class Transport(Declared):
    """How to reach the model.

    backend: "openai" (any OpenAI-compatible endpoint), "local" (serve an offline model on a loopback port),
    "replay" (answer from a recorded transcript, no server), or "auto": "openai" when a base URL is configured
    (here or in OPENAI_BASE_URL) or `model` names no offline model, else "local".
    """

    backend: Backend = "auto"
    # "local": an offline model (envgen_jax.llm.models: qwen2.5-coder-1.5b, the default, or smollm2-135m);
    # "openai": the endpoint's model name (required).
    model: str | None = None
    base_url: str | None = None       # None: OPENAI_BASE_URL, else the openai package's default (api.openai.com)
    api_key: str | None = None        # None: OPENAI_API_KEY; a placeholder for keyless servers given a base URL
    temperature: float = bounded(0.0, minimum=0)
    seed: int | None = bounded(None)  # sampling seed sent with every request (matters when temperature > 0)
    max_tokens: int = bounded(2048, minimum=1)
    # Per HTTP request; None: 120 s for an endpoint, 900 s for the local server (the offline 1.5B model writes a
    # 1,200-token design in about 2 minutes on an idle 2-core CPU, several times that on a busy one).
    timeout_s: float | None = bounded(None, above=0)
    max_retries: int = bounded(4, minimum=0)     # extra tries after a time-out, refused connection, HTTP 429 or 5xx
    backoff_s: float = bounded(1.0, minimum=0)   # first wait; doubles on every retry
    backoff_max_s: float = bounded(30.0, minimum=0)
    output_mode: OutputMode = "auto"         # first structured-output request to try; "auto" = json_schema
    strict_schema: bool = False       # OpenAI "strict" needs every key required, but every setting is optional
    replay_path: str | None = None    # transcript to replay (backend "replay")
    # Local server (backend "local").
    gguf_path: str | None = None      # a GGUF file to serve instead of the offline model named by `model`
    # Context the server is started with; None: the model's own (llm/models.py). A run keeps one conversation:
    # 4 calls of ~2k prompt and ~1.2k reply tokens plus repair turns outgrow 8,192 by the fourth call.
    n_ctx: int | None = bounded(None, minimum=1)
    n_threads: int = bounded(2, minimum=1)
    startup_timeout_s: float = bounded(120.0, minimum=0)  # loading the model (the 1.5B takes seconds; more when busy)
    prompt_cache: bool = True         # later calls reuse the server's cache of the conversation so far

    PATH, WHAT = "llm.transport.", "LLM settings"  # read_llm names a problem by the path given (flat: llm.model)

    def more_problems(self) -> list[str]:
        out = []
        if self.backend == "local" and self.model and not self.gguf_path and self.model not in OFFLINE_MODELS:
            out.append(f"{self.PATH}model: {self.model!r} is not an offline model; the local backend serves one of "
                       f"{', '.join(OFFLINE_MODELS)} (or {self.PATH}gguf_path)")
        if self.backend == "replay" and not self.replay_path:
            out.append(f"{self.PATH}replay_path: the replay backend needs the transcript to replay")
        return out

    @property
    def request_timeout_s(self) -> float:
        if self.timeout_s is not None:
            return self.timeout_s
        return 900.0 if self.resolved_backend() == "local" else 120.0

    def resolved_backend(self) -> str:
        if self.backend != "auto":
            return self.backend
        if self.base_url or os.environ.get("OPENAI_BASE_URL"):
            return "openai"
        return "local" if self.model is None or self.model in OFFLINE_MODELS else "openai"

    @property
    def local_model(self) -> str:
        """The offline model the local backend serves (the name, or the file's stem for gguf_path)."""
        if self.gguf_path:
            return Path(self.gguf_path).stem
        return self.model or DEFAULT_OFFLINE_MODEL

    @property
    def model_name(self) -> str | None:
        """The model that answers: the offline one for the local backend, else `model`."""
        return self.local_model if self.resolved_backend() == "local" else self.model


@dataclasses.dataclass(frozen=True)
class Strategy(Declared):
    """How the designer asks (docs/designer.md; each idea measured in benchmarks/designer_quality.py and decided by a
    rule set beforehand). The defaults are the adopted designer: one environment per reply, each feedback call in a
    fresh conversation, the weakest quarter's needs and levers, one weak skill per environment. A config that
    reruns an older designer pins its values (configs/study_cpu.yaml, configs/smoke.yaml)."""

    max_repairs: int = bounded(2, minimum=0)     # follow-up "fix these problems" turns after an invalid reply
    # Valid but wasteful designs sent back for repair, up to max_repairs turns (used as they are if the repairs do
    # not mend them):
    # "all": repeated or unchanged environments, repeats of any earlier design, and targets or purposes their
    # settings do not serve (llm/targeting.py); "duplicates": only repeated or unchanged environments;
    # "none" (the default): every valid design is accepted as it is. Sent back, the 1.5B model mended 4 of 38
    # advised environments in two turns, and without those turns it targeted as often (69% vs 72%, p 0.83) and
    # repeated no more, writing 603 fewer tokens a call (p < 0.01; docs/designer.md).
    advice: Advice = "none"
    # Sampling temperature of repair turns (None: the transport's `temperature`), each turn with its own seed. At
    # temperature 0 the 1.5B offline model answered repair turns with its previous reply word for word; sampled at
    # 0.7 its repeats of the earlier design fell from 46% to 29% of environments
    # (benchmarks/results/designer_quality.md).
    repair_temperature: float | None = bounded(0.7, minimum=0)
    # Four ideas that did not pass the rule (an idea stays only if removing it lowers targeting, or raises repeats
    # or tokens written, with p < 0.05 over two requests per profile), each off by default but kept as options:
    # targets: each environment first names the achievements it trains (1 to 3, constrained to the game's names),
    # then its settings; with advice "all", a target its settings give nothing for goes back for repair.
    targets: bool = False
    # needs: the achievements listed with what each needs, from the game's rules (its prompts/needs.txt).
    needs: bool = False
    # history: the earlier environments in the feedback turn, "json" (the configurations, as the paper did) or
    # "summary" (their settings in words, what they trained and what the agent unlocked inside each, marked as tried).
    history: History = "json"
    # only_changes: the reply's schema offers each setting's values except its default (a setting written is a
    # setting changed; the validator still accepts defaults from unconstrained endpoints).
    only_changes: bool = False
    # conversation: "fresh" (the default) asks each feedback call in a new conversation, the generation prompt then
    # the feedback, with the earlier designs shown only as `history` describes them: the model has no earlier reply
    # to paste back (in the second study's envgen run every environment of cycles 3 and 4 repeated an earlier
    # cycle's; docs/designer.md); "continued" keeps every cycle's prompt and accepted reply in one conversation
    # (the paper's).
    conversation: Conversation = "fresh"
    # envs_per_reply: environments asked per reply (None: all in one, as the paper). Asked all at once, the 1.5B
    # model wrote near-copies of its first environment and repair turns returned the same reply; one per reply,
    # each on its own branch with the ones written so far in words, its first-cycle environments all differed, with
    # no repair (benchmarks/designer_quality.py; docs/designer.md).
    envs_per_reply: int | None = bounded(1, minimum=1)
    # analysis: with envs_per_reply, "first_reply" has the later replies of a design read the first one's analysis
    # of the feedback in their prompt and write environments only; "each_reply" has every reply write its own (only
    # the first is kept). first_reply wrote 276 fewer tokens a call (p 0.04) and targeted no worse (p 0.61) on two
    # requests per profile, so it was adopted by the rule (docs/designer.md).
    analysis: Analysis = "first_reply"
    # distinct: every design distinct (issue 45): a valid reply holding an environment that repeats another of its
    # design, or one of an earlier design of the run (every design this designer accepted, kept in its state, so
    # also after a resume, and the `previous` a feedback call is given), is asked again on a fresh branch, the
    # repeat named in words and the repeating reply not shown (the 1.5B model pasted an echoed reply back), with
    # the next seed, within max_repairs; what still repeats after them is used, and kept in the transcript's
    # "repeats_left" and report.json's adaptation. Equality is on the validated configurations, not their text.
    # Off: repeats are accepted as before (advice "all"/"duplicates" still send them back as repair turns).
    distinct: bool = True
    # weak_needs: the feedback turn lists, for the weakest quarter of the achievements only, what each needs (the
    # game's prompts/needs.txt) and which achievements come just before it (issue 45: lowest profile 0% -> 12%;
    # the whole table, `needs`, did not help on average).
    weak_needs: bool = True
    # weak_levers: with each of those, the settings that make it easier to learn (the game's targeting map,
    # llm/targeting.py: e.g. Heist's collect_key_blue: key_distance near, a small maze, num_keys 1 to 3; issue 45:
    # lowest 38% -> 50% on top of focus).
    weak_levers: bool = True
    # focus: "weakest" asks each environment of a feedback design for one skill of the weakest quarter in turn,
    # weakest first (environment 1 for the weakest, 2 for the next, ...; round again when the design has more
    # environments than the quarter has skills), the model choosing its purpose and settings (issue 45: lowest
    # 12% -> 38%); "none": the model picks which weak skills each environment serves (the paper's way).
    focus: Focus = "weakest"

    PATH, WHAT = "llm.strategy.", "LLM settings"


SECTIONS: dict[str, type] = {"transport": Transport, "strategy": Strategy}
SECTION_OF = {f.name: name for name, cls in SECTIONS.items() for f in dataclasses.fields(cls)}
# Keys an older llm: block may hold for ideas measured and not adopted (they moved to benchmarks/designer_quality.py):
# read at the value that asks as every designer does now, so old run directories load; any other value is refused.
RETIRED = {"unserved": "accept"}
NOT_ADOPTED = {("focus", "lagging")}  # values of a setting that stayed, measured in benchmarks/designer_quality.py


def flat_key(_data: Mapping, key: str, value: Any, problems: list[str]):
    """A key of `llm:` written flat (`llm.model`, or `llm.focus` as before the strategy's section): the path of its
    section's setting (a row of the old-key table, `config_io.move_old_keys`); a retired key or value is checked
    and dropped; None for the sections themselves and unknown keys (reported when `llm:` is read)."""
    if key in RETIRED or (isinstance(value, str) and (key, value) in NOT_ADOPTED):
        if value != RETIRED.get(key):
            problems.append(f"llm.{key}: {value!r} was measured and not adopted (docs/designer.md); "
                            f"benchmarks/designer_quality.py keeps the variant")
        return []
    return [f"llm.{SECTION_OF[key]}.{key}"] if key in SECTION_OF else None


FLAT_KEYS = {"llm.*": flat_key}  # the old-key table's row for `llm:` alone (LLMSettings.from_dict)


def read_llm(_run: Mapping, value: Any, path: str, problems: list[str]) -> "LLMSettings | None":
    """The run configuration's `llm:` field (`from_mapping`'s `read` hook), its flat keys already moved into their
    sections (run_config.OLD_KEYS)."""
    before = len(problems)
    settings = from_mapping(LLMSettings, {} if value is None else value, path, problems)
    if len(problems) > before:
        return None
    return settings


@dataclasses.dataclass(frozen=True)
class LLMSettings(Declared):
    """Settings of the LLM designer: how to reach the model and how to ask it."""

    transport: Transport = Transport()
    strategy: Strategy = Strategy()

    PATH, WHAT = "llm.", "LLM settings"

    @classmethod
    def of(cls, **flat: Any) -> "LLMSettings":
        """Settings from keyword arguments named as the sections' fields (`LLMSettings.of(model="m", focus="none")`),
        the rest at their defaults."""
        return cls().replace(**flat)

    def replace(self, **flat: Any) -> "LLMSettings":
        """These settings with some fields changed, each named as its section's field."""
        unknown = [k for k in flat if k not in SECTION_OF]
        if unknown:
            raise ConfigError([f"llm.{k}: unknown setting; allowed: {', '.join(SECTION_OF)}" for k in unknown],
                              what=self.WHAT)
        parts = {name: {k: v for k, v in flat.items() if SECTION_OF[k] == name} for name in SECTIONS}
        return dataclasses.replace(self, **{name: dataclasses.replace(getattr(self, name), **parts[name])
                                            for name in SECTIONS})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "LLMSettings":
        """Build from a run configuration's `llm:` mapping (sections, or flat keys), through the run
        configuration's parser."""
        problems: list[str] = []
        nested, moved = move_old_keys({"llm": {} if data is None else data}, FLAT_KEYS, (), problems)
        settings = read_llm({}, nested.get("llm"), "llm", problems)  # not a mapping: a ConfigError naming `llm`
        if problems:
            raise ConfigError(renamed(problems, moved), what="settings")
        return settings

    @classmethod
    def from_file(cls, path: str | Path) -> "LLMSettings":
        """The `llm:` section of a run configuration file (e.g. configs/llm_local.yaml)."""
        data = load_yaml(path)
        return cls.from_dict(data["llm"] if "llm" in data else data)

    def to_dict(self, secrets: bool = False) -> dict:
        """The `llm:` mapping as configs write it: the transport's settings, then `strategy:`. The API key is left
        out unless asked for, so transcripts and checkpoints never hold it."""
        out = {**dataclasses.asdict(self.transport), "strategy": dataclasses.asdict(self.strategy)}
        if not secrets:
            out["api_key"] = None
        return out

    def flat(self) -> dict:
        """Every field by its own name (the shape before the sections, as older run directories saved it)."""
        return {**dataclasses.asdict(self.transport), "api_key": None, **dataclasses.asdict(self.strategy)}
