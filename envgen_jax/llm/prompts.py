"""Prompt text and the output JSON Schema, rendered from editable templates and the environment's own schema.

Templates are plain text files under `prompts/` with `${placeholder}` fields (`string.Template`, so JSON braces need
no escaping). The settings list comes from `config_cls.describe_settings()` and the JSON Schema from
`config_cls.json_schema()`: the prompt, the structured-output constraint and the validator share one source.
"""

from __future__ import annotations

import json
import math
import string
from typing import Any, Mapping, Sequence

from envgen_jax.llm.errors import LLMError
from envgen_jax.llm.reply import MAX_TARGETS
from envgen_jax.llm.settings import Strategy
from envgen_jax.llm.spec import PROMPTS_DIR, EnvSpec

# Fields a template must keep: without them the LLM would not learn what it may set or what happened.
REQUIRED_FIELDS = {
    "generate": ("achievements", "settings", "rules", "output_format", "num_envs"),
    "feedback": ("success", "previous_configs", "output_format", "num_envs"),
}

Success = Mapping[str, Any]  # name -> (mean %, std %) or mean %


def render(template: str, where: str, required: Sequence[str] = (), **values: Any) -> str:
    fields = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(template)} - {None}
    missing = [name for name in required if name not in fields]
    if missing:
        raise LLMError(f"prompt template {where} lacks {', '.join('${' + m + '}' for m in missing)}; "
                       f"every template of this kind must contain {', '.join('${' + r + '}' for r in required)}")
    try:
        return string.Template(template).substitute({k: str(v) for k, v in values.items()})
    except KeyError as e:
        raise LLMError(f"prompt template {where} uses the unknown field ${{{e.args[0]}}}; "
                       f"available: {', '.join(sorted(values))}") from None
    except ValueError as e:  # a lone "$": the template must write "$$" for a literal dollar sign
        raise LLMError(f"prompt template {where}: {e} (write $$ for a literal $)") from None


def render_template(name: str, required: Sequence[str] = (), **values: Any) -> str:
    """Render the prompt file `name` that every game shares (in PROMPTS_DIR), as `render` does."""
    return render((PROMPTS_DIR / name).read_text(encoding="utf-8"), name, required, **values)


# The keys of one environment in the reply, in the order constrained decoding writes them (llm.targets).
ENVIRONMENT_KEYS = {
    False: ('two keys: "purpose", one or two sentences naming the skills the environment teaches and how its '
            'settings help, and "config", the settings you change, grouped by their section, using only the '
            'sections, settings and values listed above'),
    True: ('three keys: "targets", the ${skills} this environment trains (one to three names from the list of '
           '${skills} above); "purpose", one or two sentences on how its settings help the agent learn those '
           'targets; and "config", the settings you change so that the targets can be learned, grouped by their '
           'section, using only the sections, settings and values listed above'),
}


def output_format(spec: EnvSpec, n: int, settings: Strategy | None = None, per_reply: int | None = None) -> str:
    """How to reply; with `per_reply` below n (llm.envs_per_reply), the first reply holds that many of the n."""
    # No example configuration: small models copy an example instead of designing (measured, see docs/designer.md).
    targets = (settings or Strategy()).targets
    keys = string.Template(ENVIRONMENT_KEYS[targets]).substitute(skills=spec.skills)
    count = min(per_reply or n, n)
    text = render_template("output_format.txt", ("num_envs", "environment_keys"), num_envs=count,
                           environment_keys=keys).strip()
    if count < n:
        text = (f"You will write the {n} environments {count} per reply, in turns: this reply holds environment"
                f"{'s 1 to ' + str(count) if count > 1 else ' 1'} only, and you will then be asked for the next. "
                + text)
    return text


def written_prompt(configs: Sequence[Any], targets: Sequence[Sequence[str]]) -> str:
    """The environments of this design written in earlier replies, in words (llm.envs_per_reply)."""
    lines = ["The environments you already wrote for this design (do not repeat them):"]
    for i, config in enumerate(configs):
        aims = f" trains {', '.join(targets[i])};" if i < len(targets) and targets[i] else ""
        lines.append(f"Environment {i + 1}:{aims} {in_words(config)}.")
    return "\n".join(lines)


def analysis_prompt(analysis: str) -> str:
    """A later reply's reminder of the design's analysis, which it does not write again (llm.analysis)."""
    return (f'Your analysis, from your first reply: "{analysis}" This reply holds only "environments": '
            f'the analysis is written.')


def next_prompt(first: int, last: int, total: int) -> str:
    """The turn that asks for the next environments of a design written a few per reply (llm.envs_per_reply)."""
    which = f"environment {first}" if first == last else f"environments {first} to {last}"
    return render_template("next_environments.txt", ("which", "num_envs"), which=which, total=total,
                           num_envs=last - first + 1).strip()


def format_achievements(spec: EnvSpec, settings: Strategy | None = None) -> str:
    """The achievements, one per line, each with what it needs from the game's rules when `llm.needs` is on."""
    if not (settings or Strategy()).needs:
        return "\n".join(spec.achievements)
    needs = spec.needs()
    return "\n".join(f"{name}: needs {needs[name]}" for name in spec.achievements)


def generation_prompt(spec: EnvSpec, n: int, settings: Strategy | None = None, per_reply: int | None = None
                      ) -> str:
    rules = spec.read_template("rules").strip()
    return render(spec.read_template("generate"), str(spec.template_path("generate")), REQUIRED_FIELDS["generate"],
                  title=spec.title, num_envs=n, achievements=format_achievements(spec, settings),
                  settings=spec.config_cls.describe_settings(), rules=rules,
                  output_format=output_format(spec, n, settings, per_reply)).strip()


def normalise_success(spec: EnvSpec, success: Success) -> dict[str, tuple[float, float]]:
    """Check feedback numbers: every achievement present, nothing unknown, percentages in [0, 100]."""
    if not isinstance(success, Mapping):
        raise LLMError(f"success rates must be a mapping achievement -> [mean, std] or mean, "
                       f"got {type(success).__name__}")
    problems, out = [], {}
    for name in success:
        if name not in spec.achievements:
            problems.append(f"{name!r} is not a {spec.title} achievement")
    for name in spec.achievements:
        if name not in success:
            problems.append(f"{name}: missing")
            continue
        value = success[name]
        pair = list(value) if isinstance(value, (list, tuple)) else [value, 0.0]
        ok = len(pair) == 2 and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                    for v in pair)
        if not ok or not (0 <= pair[0] <= 100) or not (0 <= pair[1] <= 100):
            problems.append(f"{name}: {value!r} is not a percentage in [0, 100] or a [mean, std] pair of them")
            continue
        out[name] = (float(pair[0]), float(pair[1]))
    if problems:
        raise LLMError("bad success rates for the feedback prompt:\n" + "\n".join(f"  - {p}" for p in problems))
    return out


def _pct(x: float) -> str:
    # Integers as in the paper, but keep decimals below 10 % so rare skills (0.4 %, 0.05 %) do not read as 0 %.
    if x == 0 or x >= 10:
        return f"{x:.0f}"
    return f"{x:.1f}".rstrip("0").rstrip(".") if x >= 1 else f"{x:.2f}".rstrip("0").rstrip(".")


def format_success(spec: EnvSpec, success: Success, order: str = "listed") -> str:
    """One line per achievement: "name: mean% +/- std%". `order`: "listed" (the spec's order), "weakest" or
    "strongest" first (ties keep the spec's order), so a small model reads the skills that matter first."""
    rates = list(normalise_success(spec, success).items())
    if order != "listed":
        rates.sort(key=lambda item: item[1][0] if order == "weakest" else -item[1][0])
    return "\n".join(f"{name}: {_pct(m)}% +/- {_pct(s)}%" for name, (m, s) in rates)


def weakest_quarter(spec: EnvSpec, success: Success) -> list[str]:
    """The bottom quarter of the achievements in the feedback (at least one), weakest first, ties in the spec's
    order: the skills report.json's adaptation scores a design against (llm.weak_needs, llm.focus)."""
    rates = normalise_success(spec, success)
    ranked = sorted(spec.achievements, key=lambda name: rates[name][0])  # stable: ties keep the listed order
    return ranked[:max(1, -(-len(ranked) // 4))]


def lever_words(lever: Any, config_cls: Any) -> str:
    """One lever of the targeting map in the prompt's terms: "key_distance = near", "tree_rarity more common",
    "sapling more than the default", "start_with_blue_key = true"."""
    setting = next(s for s in config_cls.schema() if s.path == lever.path)
    if lever.toward == "among":
        return f"{setting.name} = {' or '.join(map(str, lever.values))}"
    if setting.kind is bool:
        return f"{setting.name} = {'true' if lever.toward == 'more' else 'false'}"
    if setting.choices:
        return f"{setting.name} {'more' if lever.toward == 'more' else 'less'} common"
    return f"{setting.name} {'more' if lever.toward == 'more' else 'less'} than the default ({setting.default})"


def weak_needs_text(spec: EnvSpec, success: Success, levers: bool = False) -> str:
    """What the weakest quarter of the achievements needs (the game's needs.txt), each with the achievements just
    before it (its direct prerequisites in the targeting map) and, with `levers`, the settings that make it easier to
    learn (its levers and its prerequisites'): llm.weak_needs and llm.weak_levers. "" when there is nothing to say."""
    target_map = spec.targeting
    needs = spec.needs()
    lines = []
    for name in weakest_quarter(spec, success):
        line = f"- {name}: needs {needs[name]}"
        before = target_map.prerequisites.get(name, ()) if target_map else ()
        if before:
            line += f"; comes after {', '.join(before)}"
        if levers and target_map:
            helped = ", ".join(lever_words(lever, spec.config_cls) for lever in target_map.levers(name))
            line += f"; settings that make it easier: {helped}" if helped else ""
        lines.append(line)
    head = (f"The weakest {spec.skills} and what each needs"
            + (" (with the settings that make each easier to learn)" if levers else "") + ":")
    return "\n".join([head, *lines]) if lines else ""


LEARNABILITY_PREAMBLE = (
    "Before training, the agent played a few episodes in each of these environments. Its success rate p on the "
    "achievements it has not mastered yet tells how learnable an environment is: too easy when p is near 1, too hard "
    "when p is near 0, learnable in between; the agent trained in the most learnable ones.")


def format_configs(configs: Sequence[Any], notes: Sequence[str] | None = None) -> str:
    """One line per configuration (only its changed settings); `notes`, one per configuration, follow each line."""
    if not configs:
        return "(not available)"
    if notes is not None and len(notes) != len(configs):
        raise ValueError(f"{len(notes)} notes for {len(configs)} configurations")
    lines = [f"Environment {i + 1}: {json.dumps(c.to_dict(only_changed=True))}" for i, c in enumerate(configs)]
    return _with_notes(lines, notes)


def _with_notes(lines: Sequence[str], notes: Sequence[str] | None) -> str:
    """One line per configuration, each followed by its note (learnability) under the notes' preamble."""
    if notes is None:
        return "\n".join(lines)
    return "\n".join([LEARNABILITY_PREAMBLE, *(f"{line}\n  -> {note}" for line, note in zip(lines, notes))])


def in_words(config: Any) -> str:
    """A configuration's changed settings as `setting = value`, or "the original game" (also how the designer names
    a repeated environment when it asks again, llm.distinct)."""
    changed = [f"{name} = {json.dumps(v) if isinstance(v, bool) else v}"
               for section in config.to_dict(only_changed=True).values() for name, v in section.items()]
    return ", ".join(changed) or "the original game"


def summarise_configs(configs: Sequence[Any], targets: Sequence[Sequence[str]] | None = None,
                      inside: Sequence[Mapping[str, float | None] | None] | None = None,
                      notes: Sequence[str] | None = None, top: int = 8) -> str:
    """The earlier environments in words (llm.history "summary"): each marked as tried, its changed settings as
    `setting = value`, what it trained (its targets, when the design named them) and what the agent unlocked
    inside it (`inside`: achievement -> success % in that environment, measured by the run), so that the model
    reads what was tried and how it went rather than a configuration to paste back."""
    if not configs:
        return "(not available)"
    lines = []
    for i, config in enumerate(configs):
        line = f"Environment {i + 1} (tried): {in_words(config)}."
        if targets and i < len(targets) and targets[i]:
            line += f" It was meant to train {', '.join(targets[i])}."
        if inside is not None and i < len(inside):
            rates = {k: v for k, v in (inside[i] or {}).items() if v is not None}
            shown = sorted(((v, k) for k, v in rates.items() if v >= 1), reverse=True)[:top]
            if not rates:
                line += " No episode finished in it, so what the agent learned there is unknown."
            elif shown:
                line += (" Inside it the agent unlocked " + ", ".join(f"{k} {_pct(v)}%" for v, k in shown)
                         + "; anything else in under 1% of its episodes.")
            else:
                line += " Inside it the agent unlocked nothing in 1% or more of its episodes."
        lines.append(line)
    if notes is not None and len(notes) != len(configs):
        raise ValueError(f"{len(notes)} notes for {len(configs)} configurations")
    return _with_notes(lines, notes)


def format_earlier(designs: Sequence[Sequence[Any]], previous: Sequence[Any], history: str = "summary") -> str:
    """The environments of designs before the previous one, each once and none of `previous`, oldest first, for a
    conversation that does not hold them (llm.conversation "fresh"); "" when there are none."""
    tried = []
    for design in designs:
        tried += [c for c in design if c not in previous and c not in tried]
    if not tried:
        return ""
    shown = [in_words(c) if history == "summary" else json.dumps(c.to_dict(only_changed=True)) for c in tried]
    return "\n".join(["Environments it trained in before those (tried, do not repeat them):",
                      *(f"- {line}" for line in shown)])


def feedback_prompt(spec: EnvSpec, success: Success, previous: Sequence[Any], n: int,
                    with_generation: bool = False, notes: Sequence[str] | None = None,
                    settings: Strategy | None = None, targets: Sequence[Sequence[str]] | None = None,
                    inside: Sequence[Mapping[str, float | None] | None] | None = None,
                    per_reply: int | None = None, earlier: Sequence[Sequence[Any]] = ()) -> str:
    """The feedback turn. `with_generation` prepends the generation prompt, for a conversation that starts here;
    `notes` annotate the previous configurations (envgen_sfl's learnability); with `llm.history: summary` they are
    described in words with their `targets` and the agent's success `inside` each (`summarise_configs`).
    `earlier`: designs before the previous one, listed after it (`format_earlier`), for a fresh conversation."""
    settings = settings or Strategy()
    shown = (summarise_configs(previous, targets, inside, notes) if settings.history == "summary"
             else format_configs(previous, notes))
    before = format_earlier(earlier, previous, settings.history)
    shown = f"{shown}\n{before}" if before else shown
    rates = format_success(spec, success, order="weakest")
    if settings.weak_needs or settings.weak_levers:
        rates = "\n\n".join(filter(None, [rates, weak_needs_text(spec, success, levers=settings.weak_levers)]))
    text = render(spec.read_template("feedback"), str(spec.template_path("feedback")), REQUIRED_FIELDS["feedback"],
                  title=spec.title, num_envs=n, success=rates,
                  previous_configs=shown, output_format=output_format(spec, n, settings, per_reply)).strip()
    return generation_prompt(spec, n, settings, per_reply) + "\n\n" + text if with_generation else text


def repeats_prompt(repeats: Sequence[str]) -> str:
    """What a reply asked again adds to its turn's prompt (llm.distinct): the environments its last try repeated, in
    words, not to be written again."""
    return render_template("repeats.txt", ("repeats",), repeats="\n".join(f"- {r}" for r in repeats)).strip()


def focus_prompt(skills: Sequence[str], first: int, last: int, total: int, kind: str = "achievements") -> str:
    """What a reply of a feedback design is written for (llm.focus "weakest"): environments first..last (1-based)
    of `total`, one skill each, in order."""
    which = f"environment {first}" if first == last else f"environments {first} to {last}"
    focus = skills[0] if len(skills) == 1 else f"{', '.join(skills)} (one environment each, in this order)"
    return render_template("focus.txt", ("which", "focus"), which=which, focus=focus, total=total,
                           skills=kind).strip()


def repair_prompt(problems: Sequence[str], n: int) -> str:
    return render_template("repair.txt", ("problems",), problems="\n".join(f"- {p}" for p in problems),
                           num_envs=n).strip()


ANALYSIS_MAX_CHARS = 800
PURPOSE_MAX_CHARS = 400  # bounded strings: constrained decoding must close them (SmolLM2 wrote one until the token limit)


def output_schema(config_cls, n: int, targets: Sequence[str] | None = None, changes_only: bool = False,
                  analysis: bool = True) -> dict:
    """JSON Schema of a whole reply: a short analysis first (the model reasons before it designs: constrained
    decoding writes keys in this order; left out with `analysis` False, a reply whose prompt holds the analysis,
    llm.analysis "first_reply"), then exactly n environments, each a purpose and a valid config; with `targets`
    (the game's achievement names, llm.targets) each environment first names 1-3 of them; with `changes_only`
    (llm.only_changes) a setting's default is not among its values."""
    environment = {"purpose": {"type": "string", "maxLength": PURPOSE_MAX_CHARS},
                   "config": config_cls.json_schema(changes_only)}
    if targets:
        environment = {"targets": {"type": "array", "items": {"type": "string", "enum": list(targets)},
                                   "minItems": 1, "maxItems": MAX_TARGETS}, **environment}
    properties = {"analysis": {"type": "string", "maxLength": ANALYSIS_MAX_CHARS}} if analysis else {}
    properties["environments"] = {"type": "array", "minItems": n, "maxItems": n,
                                  "items": {"type": "object", "properties": environment,
                                            "required": list(environment), "additionalProperties": False}}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}
