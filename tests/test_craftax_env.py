"""Full Craftax as a configurable game: craftax's own environment at the defaults (worlds and steps, field for field),
every knob's effect on generated worlds or on play, the free-reward trap closed, no recompiles for new designs.

Compiled programs, each shared by the module's tests: one rollout of ours and one of craftax's, one batched reset,
one batched pair of spawners (ours and craftax's)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from craftax.craftax import game_logic
from craftax.craftax.constants import Achievement, BlockType, ItemType
from craftax.craftax.craftax_state import EnvParams
from craftax.craftax.envs.craftax_symbolic_env import CraftaxSymbolicEnvNoAutoReset
from craftax.craftax.renderer import render_craftax_symbolic

from envgen_jax.envs.craftax import MAX_RETURN, CraftaxConfig, CraftaxEnv, config_to_params, make_params
from envgen_jax.envs.craftax.config import FLOORS
from envgen_jax.envs.craftax.spawn import spawn_mobs
from tests.conftest import tree_equal

STEPS, WORLDS = 96, 16
B = {b.name.lower(): b.value for b in BlockType}
A = {a.name.lower(): a.value for a in Achievement}
ENV = CraftaxEnv()


def cfg(**sections) -> CraftaxConfig:
    return CraftaxConfig.from_dict(sections)


def actions(seed: int, n: int = STEPS):
    return jax.random.randint(jax.random.PRNGKey(seed), (n,), 0, ENV.num_actions)


def _rollout(env, unwrap):
    def rollout(key, params, acts):
        reset_key, step_key = jax.random.split(key)
        obs0, state = env.reset(reset_key, params)

        def body(state, inputs):
            key, action = inputs
            obs, state, reward, done, info = env.step(key, state, action, params)
            game = unwrap(state)
            seen = info["achievements"] if isinstance(info.get("achievements_available"), jax.Array) else 0
            return state, (obs, reward, done, game.melee_mobs.mask.sum() + game.ranged_mobs.mask.sum(), seen,
                           game.light_level)

        final, trace = jax.lax.scan(body, state, (jax.random.split(step_key, acts.shape[0]), acts))
        return unwrap(state), obs0, trace, final
    return jax.jit(rollout)


@pytest.fixture(scope="module")
def ours():
    return _rollout(ENV, lambda s: s.game)


@pytest.fixture(scope="module")
def theirs():
    return _rollout(CraftaxSymbolicEnvNoAutoReset(), lambda s: s)


@pytest.fixture(scope="module")
def reset_many():
    return jax.jit(jax.vmap(ENV.reset))


def worlds(reset_many, config, seeds=range(WORLDS)):
    keys = jnp.stack([jax.random.PRNGKey(s) for s in seeds])
    _, state = reset_many(keys, make_params([config] * len(keys)).params)
    return state


@pytest.mark.parametrize("seed", [0, 3])
def test_the_original_configuration_is_craftax_step_for_step(seed, ours, theirs):
    key, acts = jax.random.PRNGKey(seed), actions(100 + seed)
    start, obs0, trace, final = ours(key, config_to_params(CraftaxConfig.original()), acts)
    start_up, obs0_up, trace_up, final_up = theirs(key, EnvParams(), acts)
    assert tree_equal(start, start_up), "the reset state differs from craftax's"
    # craftax's reset has its vitals as literals that XLA folds into the observation (9 / 10 rounded otherwise than
    # at run time); the same state rendered by one program is the same observation.
    render = jax.jit(render_craftax_symbolic)
    assert tree_equal(render(start), render(start_up)) and np.allclose(obs0, obs0_up, atol=1e-6)
    for name, a, b in zip(("obs", "reward", "done", "monsters", "-", "light"), trace, trace_up):
        if name != "-":
            assert bool(jnp.all(a == b)), f"{name} differs from craftax"
    assert tree_equal(final, final_up), "the final state differs from craftax's"


def test_the_original_configuration_builds_craftax_s_worlds(reset_many):
    """Reset after reset: 16 worlds (all nine floors each) equal craftax's own for the same keys."""
    keys = jnp.stack([jax.random.PRNGKey(1000 + s) for s in range(WORLDS)])
    _, ours = reset_many(keys, make_params([CraftaxConfig.original()] * WORLDS).params)
    _, theirs = jax.jit(jax.vmap(CraftaxSymbolicEnvNoAutoReset().reset, in_axes=(0, None)))(keys, EnvParams())
    assert tree_equal(ours.game, theirs)
    assert not np.asarray(ours.given).any()


def test_our_spawner_is_craftax_s_on_every_floor(reset_many):
    """Our spawner (the spawn table per environment) against craftax's own function, at the defaults, from states on
    every floor, cleared or not, by day and by night, and in the boss fight: the same mobs in the same cells."""
    base = worlds(reset_many, CraftaxConfig.original(), seeds=range(4)).game
    floors = jnp.repeat(jnp.arange(9), 4 * 8)
    n = floors.shape[0]
    pick = jnp.arange(n) % 4
    states = jax.tree.map(lambda x: x[pick], base)
    positions = jnp.where((floors == 0)[:, None], states.player_position, states.up_ladders[jnp.arange(n), floors])
    killed = jnp.where((jnp.arange(n) % 2 == 0)[:, None], 0, 8) * jnp.ones((n, 9), jnp.int32)
    states = states.replace(player_level=floors, player_position=positions, monsters_killed=killed,
                            light_level=jax.random.uniform(jax.random.PRNGKey(1), (n,)))
    params = jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *np.shape(x))), config_to_params(CraftaxConfig.original()))
    keys = jax.random.split(jax.random.PRNGKey(2), n)
    static = ENV.static
    pair = jax.jit(jax.vmap(lambda s, k, p: (spawn_mobs(s, k, p, static),
                                             game_logic.spawn_mobs(s, k, EnvParams(), static))))
    mine, craftax = pair(states, keys, params)
    assert tree_equal(mine, craftax)
    spawned = (mine.melee_mobs.mask.sum((1, 2)) + mine.ranged_mobs.mask.sum((1, 2))
               + mine.passive_mobs.mask.sum((1, 2)))
    assert int((spawned > 0).sum()) > n // 10, "too few spawns to compare"
    # The table is the params': peaceful and more monsters change it, on the same compiled program.
    def monsters(config):
        p = jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *np.shape(x))), config_to_params(config))
        out, _ = pair(states, keys, p)
        return int(out.melee_mobs.mask.sum() + out.ranged_mobs.mask.sum())
    before = int(states.melee_mobs.mask.sum() + states.ranged_mobs.mask.sum())
    common = monsters(CraftaxConfig.original())
    sewers = cfg(creature_settings={"sewers_monsters": "very common"})
    assert monsters(sewers) > common  # one floor's setting acts on that floor's states only:
    on_sewers = np.asarray(floors) == 3
    alone = jax.tree.map(lambda x: jnp.asarray(np.asarray(x)[~on_sewers]), pair(
        states, keys, jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *np.shape(x))), config_to_params(sewers)))[0])
    assert tree_equal(alone, jax.tree.map(lambda x: jnp.asarray(np.asarray(x)[~on_sewers]), mine))
    no_food = jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *np.shape(x))),
                           config_to_params(cfg(creature_settings={"passive_creatures": "none"})))
    assert int(pair(states, keys, no_food)[0].passive_mobs.mask.sum()) == int(states.passive_mobs.mask.sum()) \
        < int(mine.passive_mobs.mask.sum())
    more = monsters(cfg(creature_settings={f"{f.replace(' ', '_')}_monsters": "very common" for f in FLOORS}))
    assert monsters(cfg(creature_settings={"peaceful": True})) == before < common < more


def test_knobs_of_the_overworld_change_its_terrain(reset_many):
    def count(config, *blocks):
        floor0 = np.asarray(worlds(reset_many, config).game.map[:, 0])
        return sum(int((floor0 == B[b]).sum()) for b in blocks)
    assert count(cfg(world_settings={"water": "rare"}), "water") < count(CraftaxConfig(), "water") \
        < count(cfg(world_settings={"water": "very common"}), "water")
    assert count(cfg(world_settings={"sand": "rare"}), "sand") < count(CraftaxConfig(), "sand") \
        < count(cfg(world_settings={"sand": "very common"}), "sand")
    assert count(cfg(world_settings={"trees": "rare"}), "tree") < count(CraftaxConfig(), "tree") \
        < count(cfg(world_settings={"trees": "very common"}), "tree")
    rock = ("stone", "coal", "iron", "diamond", "path", "lava")
    assert count(cfg(world_settings={"mountains": "less"}), *rock) < count(CraftaxConfig(), *rock) \
        < count(cfg(world_settings={"mountains": "more"}), *rock)
    for ore in ("coal", "iron", "diamond"):
        low = count(cfg(world_settings={f"{ore}_rarity": "rare"}), ore)
        high = count(cfg(world_settings={f"{ore}_rarity": "very common"}), ore)
        assert low <= count(CraftaxConfig(), ore) < high, ore


@pytest.mark.parametrize("floor", ["gnomish mines", "troll mines", "fire realm", "ice realm"])
def test_knobs_of_the_deep_floors_change_their_ores_and_rock(floor, reset_many):
    key, index = floor.replace(" ", "_"), FLOORS.index(floor)
    ores = [B[b] for b in ("coal", "iron", "diamond", "sapphire", "ruby")]

    def count(config, blocks):
        maps = np.asarray(worlds(reset_many, config).game.map[:, index])
        return int(np.isin(maps, blocks).sum())
    assert count(cfg(world_settings={f"{key}_ores": "rare"}), ores) < count(CraftaxConfig(), ores) \
        < count(cfg(world_settings={f"{key}_ores": "very common"}), ores)
    solid = [B["stone"], *ores]
    assert count(cfg(world_settings={f"{key}_rock": "less"}), solid) < count(CraftaxConfig(), solid) \
        < count(cfg(world_settings={f"{key}_rock": "more"}), solid)


@pytest.mark.parametrize("floor", [1, 4, 8])
def test_starting_below_counts_the_floors_above_as_entered_and_cleared(floor, reset_many):
    game = worlds(reset_many, cfg(start_settings={"start_floor": FLOORS[floor]})).game
    assert (np.asarray(game.player_level) == floor).all()
    ladder_up = np.asarray(game.up_ladders[:, floor])
    assert (np.asarray(game.player_position) == ladder_up).all()
    items = np.asarray(game.item_map[np.arange(WORLDS), floor, ladder_up[:, 0], ladder_up[:, 1]])
    # the way back up (craftax builds the graveyard, the last floor, without one)
    assert (items == (ItemType.LADDER_UP.value if floor < 8 else ItemType.NONE.value)).all()
    killed = np.asarray(game.monsters_killed)
    assert (killed[:, :floor] >= 8).all() and (killed[:, floor:] < 8).all()
    entered = np.asarray(game.achievements)[:, [A[a] for a in ("enter_dungeon", "enter_gnomish_mines", "enter_sewers",
                                                              "enter_vault", "enter_troll_mines", "enter_fire_realm",
                                                              "enter_ice_realm", "enter_graveyard")]]
    assert (entered[:, :floor]).all() and not entered[:, floor:].any()
    assert (np.asarray(game.player_xp) == floor).all()


def test_start_inventory_vitals_nearby_blocks_and_ladders(reset_many):
    config = cfg(start_settings={"health": 3, "food": 2, "drink": 1, "energy": 4, "mana": 5, "ladders_open": True},
                 inventory_settings={"wood": 4, "pickaxe": "iron", "sword": "diamond", "armour": "iron", "bow": True,
                                     "arrows": 6, "potions": 2, "books": 1, "torches": 3, "sapphire": 1},
                 world_settings={"table_nearby": True, "furnace_nearby": True, "diamond_nearby": True})
    game = worlds(reset_many, config).game
    inv = game.inventory
    for name, value in (("wood", 4), ("pickaxe", 3), ("sword", 4), ("armour", 1), ("bow", 1), ("arrows", 6),
                        ("potions", 2), ("books", 1), ("torches", 3), ("sapphire", 1)):
        assert (np.asarray(getattr(inv, name)) == value).all(), name
    vitals = [np.asarray(getattr(game, f"player_{v}")) for v in ("health", "food", "drink", "energy", "mana")]
    assert [int(v[0]) for v in vitals] == [3, 2, 1, 4, 5]
    floor0 = np.asarray(game.map[:, 0])
    for block, (dr, dc) in (("crafting_table", (1, -1)), ("furnace", (1, 1)), ("diamond", (2, 0))):
        assert (floor0[:, 24 + dr, 24 + dc] == B[block]).all(), block
    assert (np.asarray(game.monsters_killed) >= 8).all()
    marked = np.asarray(game.achievements)
    for name in ("collect_wood", "collect_sapphire", "make_wood_pickaxe", "make_iron_pickaxe", "make_diamond_sword",
                 "find_bow", "make_arrow", "make_torch"):
        assert marked[:, A[name]].all(), name
    assert not marked[:, A["collect_diamond"]].any() and not marked[:, A["place_table"]].any()


def test_a_starting_inventory_pays_no_reward_and_counts_no_skill(ours):
    """The free-reward trap: craftax marks 19 achievements from the inventory on every step; a world that starts with
    items would pay up to 34 reward on the first step and report those skills learned."""
    rich = cfg(inventory_settings={"wood": 9, "stone": 9, "coal": 9, "iron": 9, "diamond": 9, "sapphire": 9,
                                   "ruby": 9, "sapling": 9, "pickaxe": "diamond", "sword": "diamond", "bow": True,
                                   "arrows": 9, "torches": 9})
    noop = jnp.zeros(STEPS, jnp.int32)  # standing still: nothing is earned by the agent
    start, _, (_, reward, _, _, seen, _), final = ours(jax.random.PRNGKey(0), config_to_params(rich), noop)
    given = np.asarray(start.achievements)
    assert given.sum() == 19 and float(jnp.max(reward)) < 1.0
    assert not np.asarray(seen).any(), "an achievement the start gave was reported as earned"


def test_episode_length_day_length_and_peaceful_act_in_play(ours):
    acts = actions(7, STEPS)
    short = cfg(episode_settings={"episode_length": 64, "day_length": 50})
    _, _, (_, _, done, _, _, light), _ = ours(jax.random.PRNGKey(1), config_to_params(short), acts)
    _, _, (_, _, done0, _, _, light0), _ = ours(jax.random.PRNGKey(1), config_to_params(CraftaxConfig()), acts)
    assert bool(done[63]) and not bool(done0[63])
    assert float(light[30]) < float(light0[30])  # a 50-step day is in its night by step 31; the original's is not
    crowded = cfg(creature_settings={"overworld_monsters": "very common"})
    counts = {}
    for name, config in (("peaceful", cfg(creature_settings={"peaceful": True})), ("crowded", crowded)):
        counts[name] = sum(int(ours(jax.random.PRNGKey(s), config_to_params(config), acts)[2][3].max())
                           for s in range(3))
    assert counts["peaceful"] == 0 < counts["crowded"]


def test_new_designs_do_not_recompile(ours):
    before = ours._cache_size()
    ours(jax.random.PRNGKey(2), config_to_params(cfg(start_settings={"start_floor": "sewers"})), actions(3))
    assert ours._cache_size() == before


def test_max_return_and_the_game(reset_many):
    from envgen_jax import games
    game = games.get("craftax")
    assert MAX_RETURN == game.max_return == 226 and len(game.achievements) == 67
    assert ENV.obs_shape == (8268,) and ENV.num_actions == 43
