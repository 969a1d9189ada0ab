"""CraftaxConfig: the designer schema, errors with field paths, the numbers behind the words (no compiling), the
command line's settings and validate, and the starting floors drawn."""

import json

import numpy as np
import pytest
from craftax.craftax.constants import FLOOR_MOB_SPAWN_CHANCE
from craftax.craftax.craftax_state import EnvParams
from craftax.craftax.world_gen.world_gen_configs import ALL_SMOOTHGEN_CONFIGS

from envgen_jax import games
from envgen_jax.cli import main
from envgen_jax.envs.craftax import CraftaxConfig, config_to_params, make_params
from envgen_jax.envs.craftax.config import FLOORS
from envgen_jax.schema import ConfigError


def test_the_original_configuration_holds_craftax_s_own_numbers():
    params = config_to_params(CraftaxConfig.original())
    for name, ours in vars(params.smoothgen).items():
        theirs = np.asarray(getattr(ALL_SMOOTHGEN_CONFIGS, name))
        assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs), name
    assert np.array_equal(params.spawn_chance, np.asarray(FLOOR_MOB_SPAWN_CHANCE))
    base = EnvParams()
    assert (int(params.max_timesteps), int(params.day_length), int(params.max_attribute)) == \
        (base.max_timesteps, base.day_length, base.max_attribute)
    assert int(params.start_floor) == 0 and params.vitals.tolist() == [9, 9, 9, 9, 9]
    assert CraftaxConfig.original().summary() == "original craftax"


def test_words_move_the_numbers_the_right_way():
    def p(**sections):
        return config_to_params(CraftaxConfig.from_dict(sections))
    base = config_to_params(CraftaxConfig())
    assert p(world_settings={"water": "very common"}).smoothgen.water_threshold[0] < base.smoothgen.water_threshold[0]
    assert p(world_settings={"diamond_rarity": "very common"}).smoothgen.ore_chances[0, 2] == np.float32(0.03)
    mines = p(world_settings={"gnomish_mines_ores": "very common", "gnomish_mines_rock": "more"}).smoothgen
    assert np.allclose(mines.ore_chances[1], 2.5 * base.smoothgen.ore_chances[1])
    assert mines.player_proximity_map_mountain_strength[1] < base.smoothgen.player_proximity_map_mountain_strength[1]
    assert (mines.ore_chances[2:] == base.smoothgen.ore_chances[2:]).all()  # other floors untouched
    peaceful = p(creature_settings={"peaceful": True}).spawn_chance
    assert (peaceful[:, 1:] == 0).all() and (peaceful[:, 0] == base.spawn_chance[:, 0]).all()
    sewers = p(creature_settings={"sewers_monsters": "very common", "passive_creatures": "none"}).spawn_chance
    assert np.allclose(sewers[3, 1:], 2.5 * base.spawn_chance[3, 1:]) and (sewers[:, 0] == 0).all()
    assert (sewers[[0, 1, 2, 4, 5, 6, 7, 8], 1:] == base.spawn_chance[[0, 1, 2, 4, 5, 6, 7, 8], 1:]).all()
    kit = p(inventory_settings={"pickaxe": "stone", "armour": "diamond", "potions": 3}, start_settings={
        "start_floor": "vaults", "mana": 2})
    assert int(kit.inventory.pickaxe) == 2 and kit.inventory.armour.tolist() == [2] * 4
    assert kit.inventory.potions.tolist() == [3] * 6 and int(kit.start_floor) == 4 and int(kit.vitals[4]) == 2


def test_bad_configurations_name_every_problem_with_its_path():
    with pytest.raises(ConfigError) as excinfo:
        CraftaxConfig.from_dict({"world_settings": {"water": "lots", "lava": 1},
                                 "start_settings": {"start_floor": "hell", "health": 0},
                                 "inventory_settings": {"pickaxe": 3, "books": 7}, "floors": {}})
    problems = "\n".join(excinfo.value.problems)
    for text in ("world_settings.water: 'lots' is not allowed", "world_settings.lava: unknown setting",
                 "start_settings.start_floor: 'hell' is not allowed", "start_settings.health: 0 is below",
                 "inventory_settings.pickaxe: 3 is a int", "inventory_settings.books: 7 is above",
                 "floors: unknown section"):
        assert text in problems, text
    assert "gnomish mines" in problems  # the allowed floors are named


def test_round_trip_and_word_forms():
    config = CraftaxConfig.from_dict({"start_settings": {"start_floor": "Gnomish_Mines"},
                                      "world_settings": {"troll_mines_ores": "Very-Common"}})
    assert config.start_floor == "gnomish mines" and config.floor() == 2
    assert CraftaxConfig.from_dict(json.loads(json.dumps(config.to_dict(only_changed=True)))) == config
    bank = make_params([config, CraftaxConfig()], capacity=3)
    assert bank.num_rows == 3 and np.asarray(bank.params.start_floor).tolist() == [2, 0, 2]


def test_the_game_on_the_command_line(tmp_path, capsys):
    assert main(["settings", "--env", "craftax"]) == 0
    out = capsys.readouterr().out
    assert "start_settings.start_floor" in out and "creature_settings.sewers_monsters" in out
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps([{"start_settings": {"start_floor": "dungeon"}}]))
    bad.write_text(json.dumps([{"creature_settings": {"dungeon_monsters": "swarming"}}]))
    assert main(["validate", str(good), "--env", "craftax"]) == 0
    assert main(["validate", str(bad), "--env", "craftax"]) == 1
    assert "[0].creature_settings.dungeon_monsters: 'swarming' is not allowed" in capsys.readouterr().err


def test_starting_floors_are_drawn(tmp_path):
    from envgen_jax.envs.craftax.render import picture, start_floors
    configs = [CraftaxConfig.from_dict({"start_settings": {"start_floor": FLOORS[i % 9]}}) for i in range(16)]
    floors = start_floors(configs)  # 16 worlds: the reset program tests/test_craftax_env.py compiles
    assert floors["floor"].tolist() == [i % 9 for i in range(16)]
    dark, lit = picture(floors["map"][2], floors["light"][2]), picture(floors["map"][0], floors["light"][0])
    assert dark.mean() < lit.mean()  # the gnomish mines are dark, the overworld is not
    path = games.get("craftax").render(configs[:2] * 8, tmp_path / "floors.png")
    assert path.exists() and path.stat().st_size > 10_000
