"""HeistConfig: the designer schema, validation with field paths, and the params bank (no compiling)."""

import itertools
import json

import jax.numpy as jnp
import pytest

from envgen_jax.envs.heist import HeistConfig, make_params
from envgen_jax.envs.heist.config import START
from envgen_jax.schema import ConfigError


def problems_of(excinfo) -> str:
    return "\n".join(excinfo.value.problems)


def test_original_is_every_default_and_round_trips():
    original = HeistConfig.original()
    assert original == HeistConfig()
    assert original.maze_dim == -1 and original.num_keys == -1 and original.max_episode_steps == 1000
    assert original.summary() == "original heist"
    config = HeistConfig.from_dict({"maze_settings": {"maze_dim": 7, "num_keys": 2},
                                    "placement_settings": {"gem_distance": "Far"},
                                    "start_settings": {"start_with_green_key": True}})
    assert config.gem_distance == "far" and config.start_keys == (False, True, False)
    assert HeistConfig.from_dict(config.to_dict()) == config
    assert HeistConfig.from_dict(json.loads(json.dumps(config.to_dict(only_changed=True)))) == config


def test_schema_text_and_json_schema():
    text = HeistConfig.describe_settings()
    for name in ("maze_dim", "num_keys", "key_distance", "gem_distance", "start_with_red_key", "max_episode_steps"):
        assert name in text
    schema = HeistConfig.json_schema()
    maze = [alternative["properties"]["maze_settings"]["properties"] for alternative in schema["anyOf"]]
    assert all(m["maze_dim"]["enum"] == [-1, 5, 7, 9, 11, 13] for m in maze)
    assert sorted(v for m in maze for v in m["num_keys"]["enum"]) == [-1, 0, 1, 2, 3]


def _schema_admits(schema: dict, data: dict) -> bool:
    """Enough of JSON Schema for a config schema: anyOf, required, additionalProperties false, enums."""
    if "anyOf" in schema:
        return any(_schema_admits(alternative, data) for alternative in schema["anyOf"])
    if "properties" not in schema:
        return data in schema.get("enum", [data])  # a boolean without an enum: either value
    return (set(schema.get("required", ())) <= set(data) and set(data) <= set(schema["properties"])
            and all(_schema_admits(schema["properties"][k], v) for k, v in data.items()))


@pytest.mark.parametrize("changes_only", [False, True])
def test_json_schema_admits_a_starting_key_only_where_the_level_has_its_door(changes_only):
    # The 1.5B model kept writing num_keys 2 with start_with_red_key through two repairs; constrained decoding
    # now cannot write it. Every key count x set of starting keys: the schema admits exactly what validates.
    schema = HeistConfig.json_schema(changes_only)
    for num_keys in (None, -1, 0, 1, 2, 3):
        for held in itertools.product((False, True), repeat=3):
            start = {f"start_with_{c}_key": True for c, h in zip(("blue", "green", "red"), held) if h}
            data = {START: start} if start else {}
            if num_keys is not None:
                data = {"maze_settings": {"num_keys": num_keys}, **data}
            writable = not (changes_only and num_keys == -1)  # the default is left out of the values
            valid = not HeistConfig.collect_problems(data)
            assert _schema_admits(schema, data) == (valid and writable), data


def test_validation_reports_every_problem_with_its_path():
    with pytest.raises(ConfigError) as excinfo:
        HeistConfig.from_dict({"maze_settings": {"maze_dim": 6, "num_keys": 4, "walls": 3},
                               "placement_settings": {"gem_distance": "close"}}, where="row")
    text = problems_of(excinfo)
    assert "row.maze_settings.maze_dim: 6 is not allowed" in text  # cross-field rules over the fields that passed
    assert "row.maze_settings.num_keys: 4 is above the maximum 3" in text
    assert "row.maze_settings.walls: unknown setting" in text
    assert "row.placement_settings.gem_distance: 'close' is not allowed" in text

    with pytest.raises(ConfigError) as excinfo:
        HeistConfig.from_dict({"maze_settings": {"maze_dim": 6, "num_keys": 1},
                               START: {"start_with_green_key": True, "start_with_blue_key": True}})
    text = problems_of(excinfo)
    assert "maze_settings.maze_dim: 6 is not allowed" in text
    assert f"{START}.start_with_green_key: the level has no green key with maze_settings.num_keys=1" in text
    assert "start_with_blue_key" not in text

    with pytest.raises(ConfigError, match="maze_settings.maze_dim: 3 is not allowed"):
        HeistConfig(maze_dim=3)  # direct construction checks too
    HeistConfig(num_keys=-1, start_with_red_key=True)  # a random key count may include red


def test_maze_must_fit_the_world():
    with pytest.raises(ConfigError) as excinfo:
        HeistConfig.from_dict({"maze_settings": {"maze_dim": 11}}, world_dim=9)
    assert "maze_settings.maze_dim: 11 does not fit the world of 9x9 (easy mode)" in problems_of(excinfo)
    with pytest.raises(ConfigError) as excinfo:
        make_params([HeistConfig(), {"maze_settings": {"maze_dim": 13}},
                     {"episode_settings": {"max_episode_steps": 9}}], world_dim=9)
    text = problems_of(excinfo)
    assert "configs[1].maze_settings.maze_dim: 13 does not fit" in text
    assert "configs[2].episode_settings.max_episode_steps: 9 is below the minimum 50" in text


def test_make_params_stacks_rows():
    bank = make_params([HeistConfig(), HeistConfig(maze_dim=9, num_keys=2, gem_distance="near",
                                                   start_with_blue_key=True, max_episode_steps=300)])
    assert bank.num_rows == 2
    params = bank.params
    assert params.maze_dim.tolist() == [-1, 9] and params.num_keys.tolist() == [-1, 2]
    assert params.gem_distance.tolist() == [0, 1] and params.max_steps.tolist() == [1000, 300]
    assert params.start_keys.tolist() == [[False] * 3, [True, False, False]]
    rows = bank.get(jnp.array([1, 1, 0]))
    assert rows.maze_dim.tolist() == [9, 9, -1]
    assert make_params(HeistConfig()).num_rows == 1
    assert make_params(HeistConfig(), capacity=3).get(2).maze_dim.tolist() == -1  # padded with the first row


def test_validate_cli_checks_the_mode_world(tmp_path, capsys):
    from envgen_jax.cli import main

    path = tmp_path / "heist.json"
    path.write_text(json.dumps([{"maze_settings": {"maze_dim": 7}}, {"maze_settings": {"maze_dim": 11}}]))
    assert main(["validate", str(path), "--env", "heist"]) == 0  # hard mode: a 13x13 world
    assert "2 valid heist configurations" in capsys.readouterr().out
    assert main(["validate", str(path), "--env", "heist", "--heist-mode", "easy"]) == 1
    err = capsys.readouterr().err
    assert "[1].maze_settings.maze_dim: 11 does not fit the world of 9x9 (easy mode); use at most 9" in err
    assert "[0]" not in err and "Traceback" not in err
    assert main(["validate", str(path), "--env", "heist", "--option", "mode=easy"]) == 1  # --heist-mode's long form
    assert "[1].maze_settings.maze_dim: 11 does not fit" in capsys.readouterr().err
    assert main(["validate", str(path), "--env", "heist", "--option", "mode=medium"]) == 1
    assert "game_options.mode: 'medium' is not one of 'easy', 'hard'" in capsys.readouterr().err
    assert main(["validate", str(path), "--env", "heist", "--option", "mode"]) == 1
    assert "--option 'mode': expected KEY=VALUE" in capsys.readouterr().err
