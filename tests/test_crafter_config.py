"""The Crafter configuration schema: strict validation with field paths, canonical words, round trips."""

import json

import pytest

from envgen_jax import ConfigError
from envgen_jax.cli import main
from envgen_jax.envs.crafter import CrafterConfig
from envgen_jax.envs.crafter.config import RARITIES


def test_paper_example_reply_parses():
    # method2.png's first example, as the paper's LLM wrote it.
    cfg = CrafterConfig.from_dict({
        "environment_settings": {"target_biome": "grassland", "tree_rarity": "common", "coal_rarity": "common"},
        "inventory_settings": {"wood": 3, "stone": 0, "wood_pickaxe": 1}})
    assert (cfg.target_biome, cfg.wood, cfg.wood_pickaxe, cfg.iron_rarity) == ("grassland", 3, 1, "common")


@pytest.mark.parametrize("spelling", ["very common", "very_common", "Very Common", "very-common", " VERY_COMMON "])
def test_rarity_spellings_normalise(spelling):
    cfg = CrafterConfig.from_dict({"environment_settings": {"coal_rarity": spelling}})
    assert cfg.coal_rarity == "very common"


def test_missing_keys_mean_original_game():
    assert CrafterConfig.from_dict({}) == CrafterConfig.original()
    assert CrafterConfig.from_dict({"inventory_settings": {}}) == CrafterConfig.original()


def test_every_problem_reported_with_field_path():
    bad = {"environment_settings": {"target_biome": "desert", "lava": "rare", "iron_rarity": 3},
           "inventory_settings": {"iron_pickaxe": 3, "wood": "5", "stone": 2.5, "coal": -1, "diamond": True},
           "weather": {}}
    with pytest.raises(ConfigError) as err:
        CrafterConfig.from_dict(bad)
    problems = err.value.problems
    assert len(problems) == 9, problems
    text = str(err.value)
    assert "inventory_settings.iron_pickaxe: 3 is above the maximum 1" in text
    assert "environment_settings.target_biome: 'desert' is not allowed; expected one of 'natural'" in text
    assert "environment_settings.lava: unknown setting" in text
    assert "inventory_settings.wood: '5' is a str" in text
    assert "inventory_settings.stone: 2.5 is not a whole number" in text
    assert "inventory_settings.coal: -1 is below the minimum 0" in text
    assert "inventory_settings.diamond: True is a bool" in text
    assert "environment_settings.iron_rarity: 3 is a int, expected one of 'rare', 'common', 'very common'" in text
    assert "weather: unknown section" in text


@pytest.mark.parametrize("data", [[], "grassland", None, {"environment_settings": "mountain"}])
def test_wrong_shapes_rejected(data):
    with pytest.raises(ConfigError):
        CrafterConfig.from_dict(data)


def test_round_trip_and_integral_floats():
    cfg = CrafterConfig(target_biome="mountain", coal_rarity="very common", wood=5, stone_pickaxe=1, peaceful=True,
                        episode_length=1024)
    assert CrafterConfig.from_dict(cfg.to_dict()) == cfg
    assert CrafterConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert CrafterConfig.from_dict({"inventory_settings": {"wood": 3.0}}).wood == 3


def test_describe_and_json_schema_cover_every_setting():
    text = CrafterConfig.describe_settings()
    schema = CrafterConfig.json_schema()
    for s in CrafterConfig.schema():
        assert s.path in text
        assert s.name in schema["properties"][s.section]["properties"]
    assert schema["properties"]["environment_settings"]["properties"]["coal_rarity"]["enum"] == list(RARITIES)
    assert schema["properties"]["inventory_settings"]["properties"]["wood_sword"]["enum"] == [0, 1]


def test_validate_cli(tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"environments": [
        {"purpose": "mine coal", "config": {"environment_settings": {"target_biome": "mountain"}}},
        {"purpose": "craft", "config": {"inventory_settings": {"wood": 3}}}]}))
    assert main(["validate", str(good)]) == 0
    out = capsys.readouterr().out
    assert "2 valid crafter configurations" in out and len(out.strip().splitlines()) == 3

    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"inventory_settings": {"iron_pickaxe": 3}}, {"environment_settings": {"x": 1}}]))
    assert main(["validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "[0].inventory_settings.iron_pickaxe: 3 is above the maximum 1" in err
    assert "[1].environment_settings.x: unknown setting" in err
    assert "Traceback" not in err

    broken = tmp_path / "broken.json"
    broken.write_text('{"environment_settings": {')
    assert main(["validate", str(broken)]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    assert main(["validate", str(tmp_path / "missing.json")]) == 1
