"""The achievement -> helpful settings tables (each game's targeting map, read by envgen_jax.llm.targeting):
complete, valid against the config schemas, and right both ways on examples read from the games' rules; purposes
checked against their settings."""

import pytest

from envgen_jax import games
from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.envs.crafter.targeting import CRAFTER_LEVERS
from envgen_jax.envs.craftax.config import CraftaxConfig
from envgen_jax.envs.heist.config import HeistConfig
from envgen_jax.envs.heist.targeting import HEIST_LEVERS
from envgen_jax.llm import targeting
from envgen_jax.schema import ConfigError

CLASSES = {"crafter": CrafterConfig, "heist": HeistConfig, "craftax": CraftaxConfig}
MAPS = {env: games.get(env).targeting for env in CLASSES}  # what the games declare
crafter, heist = CrafterConfig.from_dict, HeistConfig.from_dict


def helps(config, achievements):  # each config through its own game's map
    return MAPS[config.ENV_NAME].helps(config, achievements)


def purpose_consistency(purpose, config):
    return MAPS[config.ENV_NAME].purpose_consistency(purpose, config)


def purpose_problems(purpose, config):
    return MAPS[config.ENV_NAME].purpose_problems(purpose, config)


@pytest.mark.parametrize("env", ["crafter", "heist", "craftax"])
def test_every_achievement_has_levers_and_prerequisites_are_achievements(env):
    own, prerequisites = MAPS[env].own_levers, MAPS[env].prerequisites
    achievements = games.get(env).designer_spec().achievements
    assert set(own) == set(achievements)
    assert set(prerequisites) <= set(achievements)
    assert all(set(p) <= set(achievements) and name not in p for name, p in prerequisites.items())
    assert all(MAPS[env].levers(name) for name in achievements)
    # One step back in the tech tree: no prerequisite of X is already needed by another prerequisite of X.
    def before(name):
        return {p for q in prerequisites.get(name, ()) for p in (q, *before(q))}
    for name, direct in prerequisites.items():
        assert not [p for p in direct if any(p in before(q) for q in direct if q != p)], name


@pytest.mark.parametrize("env", ["crafter", "heist", "craftax"])
def test_every_lever_names_a_setting_with_a_reachable_helpful_value(env):
    schema = {s.path: s for s in CLASSES[env].schema()}
    own, concepts = MAPS[env].own_levers, MAPS[env].concepts
    all_levers = {lever for group in own.values() for lever in group}
    all_levers |= {lever for c in concepts for lever in (*c.gives, *c.removes)}
    for lever in all_levers:
        assert lever.path in schema, lever
        setting = schema[lever.path]
        if lever.toward == targeting.AMONG:
            assert lever.values and all(setting.check(v)[1] is None for v in lever.values), lever
            assert setting.default not in lever.values, lever
        else:  # an ordered setting (words in order, a count, a switch) that can move that way from its default
            allowed = setting.json_schema().get("enum", [False, True])
            assert setting.default != (allowed[-1] if lever.toward == targeting.MORE else allowed[0]), lever
            assert setting.choices is None or setting.choices == tuple(sorted(setting.choices, key=allowed.index))
    for concept in concepts:
        assert concept.gives or concept.skills, concept
        assert set(concept.skills) <= set(own), concept


def test_each_helpful_value_is_recognised_as_helping():
    for env, cls in CLASSES.items():
        for name, group in MAPS[env].own_levers.items():
            for lever in group:
                setting = next(s for s in cls.schema() if s.path == lever.path)
                allowed = setting.json_schema().get("enum", [False, True])
                value = lever.values[0] if lever.toward == targeting.AMONG else (
                    allowed[-1] if lever.toward == targeting.MORE else allowed[0])
                config = cls.from_dict({setting.section: {setting.name: value}})
                assert lever.path in helps(config, [name]), (name, lever)


def test_crafter_examples_from_the_rules():
    assert helps(crafter({"environment_settings": {"iron_rarity": "very common"},
                          "inventory_settings": {"stone_pickaxe": 1}}), ["collect_iron"]) == [
        "environment_settings.iron_rarity", "inventory_settings.stone_pickaxe"]
    assert helps(crafter({"inventory_settings": {"sapling": 5}}), ["defeat_zombie"]) == []
    assert helps(crafter({"environment_settings": {"iron_rarity": "rare"}}), ["collect_iron"]) == []
    assert helps(CrafterConfig(), CRAFTER_LEVERS) == []
    # Direction: more zombies help fighting them, fewer (or none) help sleeping through the night.
    more_zombies = crafter({"creature_settings": {"zombies": "very common"}})
    no_zombies = crafter({"creature_settings": {"peaceful": True, "zombies": "rare"}})
    assert helps(more_zombies, ["defeat_zombie"]) and not helps(more_zombies, ["wake_up"])
    assert helps(no_zombies, ["wake_up"]) == ["creature_settings.zombies", "creature_settings.peaceful"]
    assert not helps(no_zombies, ["defeat_zombie"])
    assert helps(crafter({"inventory_settings": {"stone_sword": 1}}), ["defeat_zombie", "collect_drink"])
    assert helps(crafter({"environment_settings": {"target_biome": "beaches"}}), ["collect_drink"])
    assert not helps(crafter({"environment_settings": {"target_biome": "mountain"}}), ["collect_drink"])


def test_one_level_of_prerequisites():
    wood_and_table = crafter({"inventory_settings": {"wood": 3}, "environment_settings": {"table_nearby": True}})
    assert helps(wood_and_table, ["collect_iron"])            # what making the stone pickaxe needs
    assert not helps(wood_and_table, ["collect_sapling"])
    furnace = crafter({"environment_settings": {"furnace_nearby": True}})
    assert helps(furnace, ["make_iron_pickaxe"]) and helps(furnace, ["collect_diamond"])  # diamond <- iron pickaxe
    assert not helps(furnace, ["collect_iron"])               # nothing before collect_iron needs a furnace
    trees = crafter({"environment_settings": {"tree_rarity": "very common"}})
    assert helps(trees, ["place_table"]) and not helps(trees, ["make_wood_pickaxe"])  # collect_wood is two steps back
    grassland = crafter({"environment_settings": {"target_biome": "grassland"}})
    assert not helps(grassland, ["collect_iron", "make_iron_pickaxe", "make_iron_sword", "collect_diamond"])
    assert helps(crafter({"environment_settings": {"coal_rarity": "very common"}}), ["make_iron_sword"])


def test_heist_examples_from_the_rules():
    near_keys = heist({"placement_settings": {"key_distance": "near"}})
    assert helps(near_keys, ["collect_key_green"]) and not helps(near_keys, ["collect_gem"])
    assert helps(heist({"maze_settings": {"maze_dim": 5}}), ["collect_gem"])
    assert not helps(heist({"maze_settings": {"maze_dim": 13}}), HEIST_LEVERS)
    one_door = heist({"maze_settings": {"num_keys": 1}})
    assert helps(one_door, ["collect_key_blue", "collect_gem"]) and not helps(one_door, ["collect_key_green"])
    blue_in_hand = heist({"start_settings": {"start_with_blue_key": True}})
    assert helps(blue_in_hand, ["open_lock_blue"]) and helps(blue_in_hand, ["collect_key_green"])
    assert not helps(blue_in_hand, ["collect_key_blue"])      # the blue key is then not in the maze
    assert helps(HeistConfig(), HEIST_LEVERS) == []


def test_unknown_names_are_errors():
    with pytest.raises(KeyError, match="not a crafter achievement"):
        helps(CrafterConfig(), ["collect_gem"])
    with pytest.raises(KeyError, match="not a heist achievement"):
        MAPS["heist"].levers("collect_wood")
    with pytest.raises(ConfigError, match="'minigrid' is not known"):
        games.get("minigrid")


@pytest.mark.parametrize("purpose, config, expected", [
    ("Start with a wood pickaxe to mine stone.", {"inventory_settings": {"wood_pickaxe": 1}}, True),
    ("Start with a wood pickaxe to mine stone.", {"inventory_settings": {"wood": 3}}, False),
    ("Fight zombies with a sword.", {"inventory_settings": {"wood_sword": 1}}, True),
    ("Fight zombies with a sword.", {"creature_settings": {"zombies": "very common"}}, False),
    ("No zombies, so the agent can sleep safely.", {"creature_settings": {"peaceful": True}}, True),
    ("No zombies, so the agent can sleep safely.", {"creature_settings": {"zombies": "very common"}}, False),
    ("A mountain rich in iron, with a furnace and table nearby.",
     {"environment_settings": {"target_biome": "mountain", "furnace_nearby": True, "table_nearby": True}}, True),
    ("A mountain rich in iron, with a furnace and table nearby.",
     {"environment_settings": {"target_biome": "mountain", "table_nearby": True}}, False),
    ("Drink water often.", {"environment_settings": {"target_biome": "beaches"}}, True),
    ("Drink water often.", {"environment_settings": {"target_biome": "grassland"}}, False),
    ("Learn to craft a stone pickaxe.", {"inventory_settings": {"wood": 2, "stone": 2}}, True),   # a skill, not a gift
    ("Learn to craft a stone pickaxe.", {"inventory_settings": {"sapling": 2}}, False),
    # The feedback it cites ("collect_diamond: 0%") is context, not a promise.
    ("collect_diamond is at 0%, so practise eating cows.", {"creature_settings": {"cows": "very common"}}, True),
    ("Practise the basics.", {"inventory_settings": {"wood": 1}}, None),
])
def test_crafter_purposes(purpose, config, expected):
    assert purpose_consistency(purpose, crafter(config)) is expected


@pytest.mark.parametrize("purpose, config, expected", [
    ("A small maze with the blue key near the start.",
     {"maze_settings": {"maze_dim": 5}, "placement_settings": {"key_distance": "near"}}, True),
    ("A small maze with the blue key near the start.", {"maze_settings": {"maze_dim": 13}}, False),
    ("Find the gem quickly.", {"placement_settings": {"gem_distance": "near"}}, True),
    ("Open doors with keys already in hand.", {"maze_settings": {"num_keys": 2},
                                               "start_settings": {"start_with_blue_key": True}}, True),
    ("No doors: go straight for the gem.", {"maze_settings": {"num_keys": 3}}, False),
    ("Explore.", {"maze_settings": {"maze_dim": 5}}, None),
])
def test_heist_purposes(purpose, config, expected):
    assert purpose_consistency(purpose, heist(config)) is expected


def test_problems_say_what_is_missing():
    (problem,) = purpose_problems("Start with a wood pickaxe.", crafter({"inventory_settings": {"wood": 3}}))
    assert "wood pickaxe" in problem and "wood_pickaxe" in problem
    assert purpose_problems("Practise.", CrafterConfig()) is None
    mountain = crafter({"environment_settings": {"target_biome": "mountain"}})
    assert purpose_problems("Mine iron in a mountain.", mountain) == []
