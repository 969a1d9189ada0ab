"""Prompt text is generated from the same schema the validator uses, from editable templates."""

import json

import pytest

from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.llm import prompts
from envgen_jax.llm.errors import LLMError
from envgen_jax.llm.settings import Strategy
from envgen_jax import games
from envgen_jax.envs.crafter.game import CRAFTER_ACHIEVEMENTS
from envgen_jax.llm.spec import EnvSpec

SPEC = games.get("crafter").designer_spec()
SUCCESS = {name: (float(i * 4), 1.5) for i, name in enumerate(CRAFTER_ACHIEVEMENTS)}


def test_crafter_achievements_match_the_environment():
    assert len(CRAFTER_ACHIEVEMENTS) == 22 and list(CRAFTER_ACHIEVEMENTS) == sorted(CRAFTER_ACHIEVEMENTS)
    crafter = pytest.importorskip("envgen_jax.envs.crafter")
    assert set(CRAFTER_ACHIEVEMENTS) == {str(a).lower() for a in crafter.ACHIEVEMENTS}


def test_generation_prompt_lists_every_setting_value_and_achievement():
    text = prompts.generation_prompt(SPEC, 4)
    for s in CrafterConfig.schema():
        assert s.path in text
        assert s.describe() in text  # the validator's own wording, verbatim
        for choice in s.choices or ():
            assert repr(choice) in text
    needs = SPEC.needs()
    with_needs = prompts.generation_prompt(SPEC, 4, Strategy(needs=True))
    for name in CRAFTER_ACHIEVEMENTS:  # bare by default, each with what it needs with llm.needs
        assert f"\n{name}\n" in text and "needs " + needs[name] not in text
        assert f"\n{name}: needs {needs[name]}\n" in with_needs
    assert "stone pickaxe in hand" in needs["collect_iron"] and "2 wood" in needs["place_table"]
    for rule in ("only drink water", "wood pickaxe", "stone pickaxe", "iron pickaxe", "table", "furnace",
                 "Skeletons", "Zombies", "Sleeping", "mountains"):
        assert rule in text, rule
    assert "exactly 4 environments" in text and "$" not in text


def test_number_of_environments_is_a_parameter():
    assert "exactly 7 environments" in prompts.generation_prompt(SPEC, 7)
    schema = prompts.output_schema(CrafterConfig, 7)["properties"]["environments"]
    assert schema["minItems"] == schema["maxItems"] == 7
    assert schema["items"]["properties"]["config"] == CrafterConfig.json_schema()


def test_output_schema_uses_enums_for_integers():
    # llama.cpp's grammar ignores minimum/maximum, so every integer must be an explicit list.
    config = prompts.output_schema(CrafterConfig, 4)["properties"]["environments"]["items"]["properties"]["config"]
    for section in config["properties"].values():
        for prop in section["properties"].values():
            assert "enum" in prop or prop["type"] == "boolean"


def test_prompts_show_no_copyable_configuration_and_ask_for_analysis_first():
    # Small models copied the example configuration nearly verbatim (SmolLM2-135M, Qwen2.5-Coder-1.5B): none is shown.
    previous = [CrafterConfig.from_dict({"environment_settings": {"target_biome": "mountain"}})]
    for text in (prompts.generation_prompt(SPEC, 4), prompts.feedback_prompt(SPEC, SUCCESS, previous, 4)):
        assert '"config": {' not in text and '"purpose": "' not in text
    schema = prompts.output_schema(CrafterConfig, 4)
    assert list(schema["properties"]) == ["analysis", "environments"] == schema["required"]


def test_feedback_lists_the_weakest_achievements_first():
    success = {name: (float(i), 0.0) for i, name in enumerate(reversed(CRAFTER_ACHIEVEMENTS))}
    lines = prompts.format_success(SPEC, success, order="weakest").splitlines()
    assert [line.split(":")[0] for line in lines] == list(reversed(CRAFTER_ACHIEVEMENTS))
    strongest = prompts.format_success(SPEC, success, order="strongest").splitlines()
    assert strongest == lines[::-1]
    text = prompts.feedback_prompt(SPEC, success, [], 4)
    assert text.index("wake_up: 0%") < text.index("collect_coal: 21%")


def test_feedback_prompt_has_scores_and_previous_configs():
    previous = [CrafterConfig.from_dict({"environment_settings": {"target_biome": "mountain"}}), CrafterConfig()]
    text_json = prompts.feedback_prompt(SPEC, SUCCESS, previous, 3)
    assert "collect_coal: 0% +/- 1.5%" in text_json and "wake_up: 84% +/- 1.5%" in text_json
    assert "collect_stone: 20% +/- 1.5%" in text_json
    for name in CRAFTER_ACHIEVEMENTS:
        assert f"{name}: " in text_json
    # llm.history "json" (the default): the configurations as the paper showed them; "summary": settings in words,
    # marked as tried, with targets and what the agent unlocked inside each.
    assert 'Environment 1: {"environment_settings": {"target_biome": "mountain"}}' in text_json
    assert "Environment 2: {}" in text_json and "(tried)" not in text_json
    summary = Strategy(history="summary")
    text = prompts.feedback_prompt(SPEC, SUCCESS, previous, 3, settings=summary)
    assert "Environment 1 (tried): target_biome = mountain." in text
    assert "Environment 2 (tried): the original game." in text and '{"environment_settings"' not in text
    inside = [{"collect_stone": 62.5, "collect_coal": 0.4, "place_stone": 12.0}, {"collect_wood": None}]
    told = prompts.feedback_prompt(SPEC, SUCCESS, previous, 3, settings=summary, targets=[["collect_stone"], []],
                                   inside=inside)
    assert ("Environment 1 (tried): target_biome = mountain. It was meant to train collect_stone. Inside it the agent "
            "unlocked collect_stone 62%, place_stone 12%; anything else in under 1% of its episodes.") in told
    assert "Environment 2 (tried): the original game. No episode finished in it" in told
    assert "exactly 3 environments" in text and "wake_up" in text
    assert "controllable" not in text and "You control the following settings" not in text
    first = prompts.feedback_prompt(SPEC, SUCCESS, [], 3, with_generation=True)
    assert first.startswith(prompts.generation_prompt(SPEC, 3)) and "(not available)" in first


def test_success_accepts_mean_only_and_rejects_bad_numbers():
    rates = prompts.normalise_success(SPEC, {name: 12 for name in CRAFTER_ACHIEVEMENTS})
    assert rates["collect_coal"] == (12.0, 0.0)
    assert prompts.format_success(SPEC, {**SUCCESS, "eat_plant": (0.04, 0.1)}).count("eat_plant: 0.04% +/- 0.1%") == 1
    bad = {**SUCCESS, "place_stone": 400.0, "collect_wood": "high", "flying": 3}
    del bad["wake_up"]
    with pytest.raises(LLMError) as e:
        prompts.normalise_success(SPEC, bad)
    for fragment in ("place_stone", "collect_wood", "'flying' is not a Crafter achievement", "wake_up: missing"):
        assert fragment in str(e.value)


def test_small_percentages_keep_a_decimal():
    assert prompts._pct(0.4) == "0.4" and prompts._pct(38.2) == "38" and prompts._pct(0) == "0"
    assert prompts._pct(2.0) == "2" and prompts._pct(0.04) == "0.04" and prompts._pct(2.25) == "2.2"


def test_edited_template_must_keep_required_fields(tmp_path):
    for kind in ("generate", "feedback", "rules", "needs"):
        (tmp_path / f"{kind}.txt").write_text(SPEC.read_template(kind))
    spec = EnvSpec("crafter", "Crafter", CrafterConfig, CRAFTER_ACHIEVEMENTS, prompts_dir=tmp_path)
    assert prompts.generation_prompt(spec, 4) == prompts.generation_prompt(SPEC, 4)
    (tmp_path / "generate.txt").write_text("Design ${num_envs} worlds.\n${achievements}\n${rules}\n"
                                                   "${output_format}")
    with pytest.raises(LLMError, match=r"lacks \$\{settings\}"):
        prompts.generation_prompt(spec, 4)
    (tmp_path / "generate.txt").write_text(SPEC.read_template("generate") + "${colour}")
    with pytest.raises(LLMError, match="unknown field"):
        prompts.generation_prompt(spec, 4)
    (tmp_path / "feedback.txt").unlink()
    with pytest.raises(LLMError, match="feedback.txt is missing"):
        prompts.feedback_prompt(spec, SUCCESS, [], 4)


def test_repair_prompt_lists_problems():
    text = prompts.repair_prompt(["environments: expected exactly 4 environments, got 3"], 4)
    assert "- environments: expected exactly 4 environments, got 3" in text and "exactly 4 environments" in text


def test_heist_plugs_in_with_its_own_templates():
    heist = pytest.importorskip("envgen_jax.envs.heist")
    from envgen_jax.envs.heist import HeistEnv

    spec = games.get("heist").designer_spec()
    assert spec.config_cls is heist.HeistConfig and spec.achievements == tuple(heist.ACHIEVEMENTS)
    text = prompts.generation_prompt(spec, 4)
    for s in heist.HeistConfig.schema():
        assert s.describe() in text
    for name in heist.ACHIEVEMENTS:
        assert name in text
    success = {name: (50.0, 5.0) for name in heist.ACHIEVEMENTS}
    assert "collect_gem: 50% +/- 5%" in prompts.feedback_prompt(spec, success, [], 4)
    # Cross-field rules and the world-size check come back as repairable problems.
    from envgen_jax.llm.reply import parse_reply

    too_big = json.dumps({"environments": [{"purpose": "p", "config": {"maze_settings": {"maze_dim": 13}}}]})
    assert parse_reply(too_big, spec.config_cls, 1).ok
    small = games.get("heist").designer_spec(HeistEnv(mode="easy"))  # a 9x9 world
    assert "does not fit" in parse_reply(too_big, small.config_cls, 1, check=small.check).problems[0]
    crossed = json.dumps({"environments": [{"purpose": "p", "config": {
        "maze_settings": {"num_keys": 1}, "start_settings": {"start_with_red_key": True}}}]})
    assert "no red key" in parse_reply(crossed, spec.config_cls, 1).problems[0]
