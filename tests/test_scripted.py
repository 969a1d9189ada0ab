"""`method: scripted`: the no-LLM control that follows the feedback by the game's targeting map (fast: no training)."""

import math

import pytest

from envgen_jax import games, methods
from envgen_jax.envs.craftax.config import CraftaxConfig
from envgen_jax.envs.crafter.config import CrafterConfig
from envgen_jax.envs.heist.config import WORLD_DIMS, HeistConfig
from envgen_jax.methods import scripted
from envgen_jax.methods.base import DesignContext
from envgen_jax.run_config import load_run_config
from tests.golden import TINY

GEM_SHORTCUTS = {f"start_settings.start_with_{c}_key" for c in ("blue", "green", "red")}


def _cfg(*overrides):
    return load_run_config(None, TINY + ["method=scripted", *overrides])


def _design(config_cls, feedback, n=4, cycle=1, num_designers=None, cfg=None):
    ctx = DesignContext(cfg=cfg or _cfg(), cycle=cycle, cycles=4, n=n,
                        num_designers=num_designers or (len(feedback) if feedback else 1), feedback=feedback,
                        previous=[], config_cls=config_cls, designers=lambda: pytest.fail("no designer is asked"),
                        on_llm_call=lambda s, n: pytest.fail("no LLM call is counted"))
    return methods.get("scripted").design(ctx)


def _map(env: str):
    return games.get(env).targeting


def _feedback(config_cls, means: dict, default: float = 50.0) -> dict:
    own = _map(config_cls.ENV_NAME).own_levers
    return {a: (means.get(a, default), 1.0) for a in own}


def _targets(design: dict) -> list[str]:
    return [p.split()[1] for p in design["purposes"]]


def test_scripted_is_a_registered_method_without_an_llm():
    assert "scripted" in methods.METHODS
    assert methods.uses_llm("scripted") is False and methods.llm_calls("scripted", 1, 4) == 0
    module = methods.get("scripted")
    assert module.NAME == "scripted" and module.cycle_phases is methods.get("envgen").cycle_phases
    cfg = _cfg()
    assert [p.kind for p in module.cycle_phases(cfg, 0)] == [p.kind for p in methods.get("envgen").cycle_phases(cfg, 0)]


def test_targets_are_the_weakest_unmastered_achievements_in_order():
    means = {"collect_diamond": 0.0, "collect_iron": 3.0, "make_stone_pickaxe": 3.0, "place_furnace": 10.0,
             "eat_cow": 12.0}
    [design] = _design(CrafterConfig, [_feedback(CrafterConfig, means)], n=4)
    # make_stone_pickaxe ties collect_iron at 3 % and comes first in the tech tree
    assert _targets(design) == ["collect_diamond", "make_stone_pickaxe", "collect_iron", "place_furnace"]
    assert design["purposes"][2].startswith("trains collect_iron (weak: 3%): iron very common")
    assert len(design["configs"]) == 4
    assert design["targets"] == [[t] for t in _targets(design)]  # written to environments/cycle_<c>.json


def test_mastered_achievements_are_skipped_and_the_rest_cycled():
    own = _map("crafter").own_levers
    means = {a: 95.0 for a in own} | {"collect_wood": 90.0, "wake_up": 40.0, "collect_coal": 89.9}
    [design] = _design(CrafterConfig, [_feedback(CrafterConfig, means)], n=5)
    # 90 % (method_options.scripted.mastered_at) is mastered; the two unmastered ones repeat, weakest first
    assert _targets(design) == ["wake_up", "collect_coal", "wake_up", "collect_coal", "wake_up"]
    assert design["configs"][0] == design["configs"][2]
    # a stricter threshold from the run configuration
    stricter = _cfg("method_options.scripted.mastered_at=0.96")
    [strict] = _design(CrafterConfig, [_feedback(CrafterConfig, means)], n=3, cfg=stricter)
    assert _targets(strict)[0] == "wake_up" and "collect_wood" in _targets(strict)
    # everything mastered: the weakest still come first
    [done] = _design(CrafterConfig, [_feedback(CrafterConfig, {"eat_cow": 91.0}, default=99.0)], n=2)
    assert _targets(done)[0] == "eat_cow" and done["purposes"][0].startswith("trains eat_cow (mastered: 91%)")


def test_nan_counts_as_zero():
    feedback = _feedback(CrafterConfig, {"collect_sapling": math.nan, "collect_drink": 1.0})
    [design] = _design(CrafterConfig, [feedback], n=2)
    assert _targets(design) == ["collect_sapling", "collect_drink"]


def test_cycle_one_takes_the_tech_tree_order():
    order = scripted.tech_tree_order("crafter")
    assert set(order) == set(_map("crafter").own_levers)
    assert order.index("collect_wood") < order.index("place_table") < order.index("make_wood_pickaxe") \
        < order.index("collect_stone") < order.index("make_stone_pickaxe") < order.index("collect_iron") \
        < order.index("make_iron_pickaxe") < order.index("collect_diamond")
    [design] = _design(CrafterConfig, None, n=4, cycle=0)
    assert _targets(design) == list(order[:4])
    assert all("(cycle 1, no feedback yet)" in p for p in design["purposes"])
    assert scripted.tech_tree_order("heist") == ("collect_key_blue", "collect_gem", "open_lock_blue",
                                                 "collect_key_green", "open_lock_green", "collect_key_red",
                                                 "open_lock_red")


@pytest.mark.parametrize("config_cls", [CrafterConfig, HeistConfig, CraftaxConfig])
def test_every_config_pulls_its_targets_levers_and_is_valid(config_cls):
    env = config_cls.ENV_NAME
    target_map = _map(env)
    own, prerequisites = target_map.own_levers, target_map.prerequisites
    original = config_cls.original()
    order = scripted.tech_tree_order(env)
    [design] = _design(config_cls, None, n=len(order), cycle=0)
    assert _targets(design) == list(order)
    for target, data, text in zip(order, design["configs"], design["purposes"]):
        config = config_cls.from_dict(data)  # valid
        assert config.to_dict() == data and config != original
        if env == "heist":
            assert all(not config.fit_problems(dim) for dim in WORLD_DIMS.values())
        for lever in own[target]:  # every own lever, bar the gem's shortcuts that "no doors" excludes
            if not (target == "collect_gem" and lever.path in GEM_SHORTCUTS):
                assert lever.pulled(config, original), (target, lever)
        own_paths = {lever.path for lever in own[target]}
        for p in prerequisites.get(target, ()):  # and every prerequisite's that no own lever overrules
            for lever in own[p]:
                assert lever.pulled(config, original) or lever.path in own_paths, (target, p, lever)
        assert target_map.helps(config, [target])
        # only the levers of the target and its prerequisites are pulled: every change helps the target
        changed = {s.path for s in config_cls.schema() if getattr(config, s.name) != s.default}
        assert set(target_map.helps(config, [target])) == changed
        assert changed <= {lever.path for lever in target_map.levers(target)}
        assert target_map.purpose_consistency(text, config) is not False, text
    # no lever is left out for validity, bar the gem's start-with-key shortcuts (they need doors; "no doors" won)
    assert all(not scripted.build(config_cls, a)[2] for a in order if a != "collect_gem")
    if env == "heist":
        config, _, dropped = scripted.build(HeistConfig, "collect_gem")
        assert {lever.path for lever in dropped} == GEM_SHORTCUTS and config.num_keys == 0


def test_lever_values():
    config, pulled, _ = scripted.build(CrafterConfig, "collect_iron")
    assert (config.iron_rarity, config.target_biome, config.stone_pickaxe, config.wood, config.stone) == \
        ("very common", "mountain", 1, 9, 9)
    assert config.table_nearby and config.furnace_nearby is False and config.tree_rarity == "common"
    config, _, _ = scripted.build(CrafterConfig, "wake_up")
    assert (config.zombies, config.peaceful, config.stone) == ("none", True, 9)
    config, _, _ = scripted.build(HeistConfig, "collect_key_green")
    assert (config.key_distance, config.maze_dim, config.num_keys, config.start_with_blue_key) == ("near", 7, 2, True)


def test_heist_targets_the_weakest_subtasks():
    means = {"collect_key_red": 0.0, "open_lock_red": 0.0, "open_lock_green": 20.0, "collect_gem": 20.0}
    [design] = _design(HeistConfig, [_feedback(HeistConfig, means, default=95.0)], n=4)
    assert _targets(design) == ["collect_key_red", "open_lock_red", "collect_gem", "open_lock_green"]
    for target, data in zip(_targets(design), design["configs"]):
        assert _map("heist").helps(HeistConfig.from_dict(data), [target])


def test_deterministic():
    feedback = [_feedback(CrafterConfig, {"collect_iron": 0.0, "eat_plant": 5.0})]
    assert _design(CrafterConfig, feedback) == _design(CrafterConfig, feedback)
    assert _design(CrafterConfig, None, cycle=0) == _design(CrafterConfig, None, cycle=0)


def test_per_seed_feedback_gives_each_designer_its_own_design():
    cfg = _cfg("schedule.feedback=per_seed")
    assert cfg.num_designers == 2
    feedback = [_feedback(CrafterConfig, {"collect_iron": 0.0, "eat_plant": 1.0}),
                _feedback(CrafterConfig, {"defeat_zombie": 0.0, "place_stone": 2.0})]
    first, second = _design(CrafterConfig, feedback, n=2, cfg=cfg)
    assert _targets(first) == ["collect_iron", "eat_plant"] and _targets(second) == ["defeat_zombie", "place_stone"]
    assert _design(CrafterConfig, feedback[:1], n=2)[0] == first  # each designer's design is its own feedback's
    # cycle 1: the same design for every designer
    a, b = _design(CrafterConfig, None, n=2, cycle=0, num_designers=2, cfg=cfg)
    assert a == b
