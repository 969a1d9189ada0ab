"""How to reach the LLM: one frozen dataclass, loadable from a run configuration (YAML/JSON mapping)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Literal, Mapping, get_args

from envgen_jax.config_io import from_mapping, load_yaml
from envgen_jax.llm.models import DEFAULT_OFFLINE_MODEL, OFFLINE_MODELS
from envgen_jax.schema import Declared, bounded

Backend = Literal["auto", "openai", "local", "replay"]
OutputMode = Literal["auto", "json_schema", "json_object", "text"]
Advice = Literal["all", "duplicates", "none"]
History = Literal["summary", "json"]
Conversation = Literal["continued", "fresh"]
Analysis = Literal["each_reply", "first_reply"]
Unserved = Literal["accept", "targets_first"]
Focus = Literal["none", "weakest", "lagging"]
BACKENDS, OUTPUT_MODES, ADVICE = get_args(Backend), get_args(OutputMode), get_args(Advice)


@dataclasses.dataclass(frozen=True)
class LLMSettings(Declared):
    """Settings of the LLM designer.

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
    max_repairs: int = bounded(2, minimum=0)     # follow-up "fix these problems" turns after an invalid reply
    # Valid but wasteful designs sent back for repair, up to max_repairs turns (used as they are if the repairs do
    # not mend them):
    # "all": repeated or unchanged environments, repeats of any earlier design, and targets or purposes their
    # settings do not serve (llm/targeting.py); "duplicates": only repeated or unchanged environments;
    # "none" (the default): every valid design is accepted as it is. Sent back, the 1.5B model mended 4 of 38
    # advised environments in two turns, and without those turns it targeted as often (69% vs 72%, p 0.83) and
    # repeated no more, writing 603 fewer tokens a call (p < 0.01; docs/designer.md).
    advice: Advice = "none"
    # Sampling temperature of repair turns (None: `temperature`), each turn with its own seed. At temperature 0 the
    # 1.5B offline model answered repair turns with its previous reply word for word; sampled at 0.7 its repeats of
    # the earlier design fell from 46% to 29% of environments (benchmarks/results/designer_quality.md).
    repair_temperature: float | None = bounded(0.7, minimum=0)
    # How the designer is asked (docs/designer.md; each measured in benchmarks/designer_quality.py and decided
    # by a rule set beforehand: an idea stays only if removing it lowers targeting, or raises repeats or tokens
    # written, with p < 0.05 over two requests per profile). None of these four met it, so each is off by default:
    # targets: each environment first names the achievements it trains (1 to 3, constrained to the game's names),
    # then its settings; with advice "all", a target its settings give nothing for goes back for repair.
    targets: bool = False
    # needs: the achievements listed with what each needs, from the game's rules (its prompts/needs.txt).
    needs: bool = False
    # history: the earlier environments in the feedback turn, "json" (the configurations, as the paper did) or
    # "summary" (their settings in words, what they trained and what the agent unlocked inside each, marked as tried).
    history: History = "json"
    # conversation: "continued" keeps every cycle's prompt and accepted reply in one conversation (the paper's);
    # "fresh" asks each feedback call in a new one, the generation prompt then the feedback, with the earlier
    # designs shown only as `history` describes them: the model has no earlier reply to paste back (in the second
    # study's envgen run every environment of cycles 3 and 4 repeated an earlier cycle's; docs/designer.md).
    conversation: Conversation = "continued"
    # only_changes: the reply's schema offers each setting's values except its default (a setting written is a
    # setting changed; the validator still accepts defaults from unconstrained endpoints).
    only_changes: bool = False
    # envs_per_reply: environments asked per reply (None: all in one, as the paper). The bundled run configs ask one
    # per reply: asked all at once, the 1.5B model wrote near-copies of its first environment and repair turns
    # returned the same reply; one per reply, each on its own branch with the ones written so far in words, its
    # first-cycle environments all differed, with no repair (benchmarks/designer_quality.py; docs/designer.md).
    envs_per_reply: int | None = bounded(None, minimum=1)
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
    # Ideas of issue 45 for skills the designer never serves, each off until measured (benchmarks/
    # designer_quality.py's v3_weak_needs, v3_weak_levers, v3_targets_where_missing):
    # weak_needs: the feedback turn lists, for the weakest quarter of the achievements only, what each needs (the
    # game's prompts/needs.txt) and which achievements come just before it (the whole table, llm.needs, did not
    # help on average).
    weak_needs: bool = False
    # weak_levers: with each of those, the settings that make it easier to learn (the game's targeting map,
    # llm/targeting.py: e.g. Heist's collect_key_blue: key_distance near, a small maze, num_keys 1 to 3).
    weak_levers: bool = False
    # unserved: when a feedback design leaves a skill of the weakest quarter with no environment whose settings
    # help it (its levers all missing), "targets_first" asks once more for one environment, in place of one whose
    # weak skills another environment also serves, that names its targets first, from those unserved skills (the
    # reply v2 wrote for every environment, here only where it is missing); "accept" leaves the design as it is.
    unserved: Unserved = "accept"
    # focus: "weakest" asks each environment of a feedback design for one skill of the weakest quarter in turn,
    # weakest first (environment 1 for the weakest, 2 for the next, ...; round again when the design has more
    # environments than the quarter has skills), the model choosing its purpose and settings; "none": the model
    # picks which weak skills each environment serves (the paper's way). "lagging": the same, round only those of
    # the weakest quarter that lag far behind the rest (success at most half the median achievement's; the weakest
    # one always), so a skill that is merely below average takes no environment from one the agent cannot do
    # (measured against "weakest": the average rose, the lowest profile did not; not adopted, docs/designer.md).
    focus: Focus = "none"
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

    PATH, WHAT = "llm.", "LLM settings"

    def more_problems(self) -> list[str]:
        out = []
        if self.backend == "local" and self.model and not self.gguf_path and self.model not in OFFLINE_MODELS:
            out.append(f"llm.model: {self.model!r} is not an offline model; the local backend serves one of "
                       f"{', '.join(OFFLINE_MODELS)} (or llm.gguf_path)")
        if self.backend == "replay" and not self.replay_path:
            out.append("llm.replay_path: the replay backend needs the transcript to replay")
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
        """The offline model the local backend serves (the name, or the file's stem for llm.gguf_path)."""
        if self.gguf_path:
            return Path(self.gguf_path).stem
        return self.model or DEFAULT_OFFLINE_MODEL

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "LLMSettings":
        """Build from a run configuration's `llm:` mapping, through the run configuration's parser."""
        return from_mapping(cls, data, "llm")  # None: the defaults; not a mapping: a ConfigError naming `llm`

    @classmethod
    def from_file(cls, path: str | Path) -> "LLMSettings":
        """The `llm:` section of a run configuration file (e.g. configs/llm_local.yaml)."""
        data = load_yaml(path)
        return cls.from_dict(data["llm"] if "llm" in data else data)

    def to_dict(self, secrets: bool = False) -> dict:
        """Plain dict; the API key is left out unless asked for, so transcripts and checkpoints never hold it."""
        out = dataclasses.asdict(self)
        if not secrets:
            out["api_key"] = None
        return out
