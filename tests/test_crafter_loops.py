"""Craftax's short per-step loops traced unrolled (`game_options.step_loops: unrolled`, envs/crafter/loops.py): the
same outputs bit for bit as craftax's scans, with fewer loops in the program."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envgen_jax import games
from envgen_jax.envs.crafter import CrafterConfig, CrafterEnv, make_params
from envgen_jax.envs.crafter.loops import short_scans_unrolled
from envgen_jax.schema import ConfigError


def _toy(carry, x):
    # integer arithmetic: this checks the loop's semantics (carry, order, stacking), exactly; whether float code
    # comes out of XLA bit for bit once the loop is gone is a property of the body, checked on craftax's step below
    carry = carry * 3 + x["a"] * x["b"]
    return carry, {"sum": carry + x["a"], "b": x["b"] % 2 == 0}


def test_short_scans_run_as_python_loops_with_scans_semantics():
    xs = {"a": jnp.arange(5, dtype=jnp.int32) - 2, "b": jnp.arange(10, 15, dtype=jnp.int32)}
    init = jnp.int32(1)
    for reverse in (False, True):
        expected = jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs, reverse=reverse))(init, xs)  # noqa: B023
        with short_scans_unrolled(max_length=8):
            assert jax.lax.scan is not jax.lax.scan.unrolled_from
            lowered = jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs, reverse=reverse)).lower(init, xs)  # noqa: B023
        assert "stablehlo.while" not in lowered.as_text()
        got = lowered.compile()(init, xs)
        jax.tree.map(np.testing.assert_array_equal, got, expected)
    # length without xs, and a body with no per-iteration outputs
    with short_scans_unrolled(max_length=8):
        carry, ys = jax.lax.scan(lambda c, _: (c + 1, None), 0, length=4)
    assert int(carry) == 4 and ys is None
    # longer scans are left to jax.lax.scan; the original comes back on leaving
    original = jax.lax.scan
    with short_scans_unrolled(max_length=3):
        text = jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs)).lower(init, xs).as_text()
    assert "stablehlo.while" in text and jax.lax.scan is original


def test_step_loops_is_a_checked_game_option():
    crafter = games.get("crafter")
    assert crafter.make_env("pixels").step_loops == "scan"  # the default until a GPU measures unrolled faster
    assert crafter.make_env("pixels", {"step_loops": "unrolled"}).step_loops == "unrolled"
    with pytest.raises(ConfigError) as err:
        crafter.read_options({"step_loops": "fast"})
    assert err.value.problems == ["game_options.step_loops: 'fast' is not one of 'scan', 'unrolled'"]
    with pytest.raises(ValueError, match="step_loops must be one of scan, unrolled"):
        CrafterEnv(step_loops="fast")


# Worlds with many mobs and short days: zombies, cows, skeletons, arrows, night spawns, fights and deaths all run
# within the steps below (episodes of 64 steps end; the step goes on past the end, which is still the same code).
CONFIGS = [CrafterConfig.from_dict({"environment_settings": {"target_biome": "mountain"},
                                    "creature_settings": {"zombies": "very common", "skeletons": "very common"},
                                    "episode_settings": {"episode_length": 64, "day_length": 50}}),
           CrafterConfig.from_dict({"environment_settings": {"target_biome": "grassland"},
                                    "creature_settings": {"cows": "very common", "zombies": "very common"},
                                    "inventory_settings": {"wood_sword": 1, "sapling": 3},
                                    "episode_settings": {"episode_length": 64, "day_length": 50}})]
STEPS = 96


def _steps(step_loops: str, params):
    """A jitted run of STEPS random actions per env (vmapped CrafterEnv.step), keeping every step's pixels, symbolic
    view, rewards, dones and achievements, and the final state: traced (not yet compiled)."""
    pixels = CrafterEnv("pixels", step_loops=step_loops)
    symbolic = CrafterEnv("symbolic", step_loops=step_loops)
    n = len(CONFIGS)

    def run(key, state):
        def one(state, k):
            k_act, k_env = jax.random.split(k)
            actions = jax.random.randint(k_act, (n,), 0, pixels.num_actions)
            obs, state, reward, done, info = jax.vmap(pixels.step)(jax.random.split(k_env, n), state, actions, params)
            seen = {"pixels": obs, "symbolic": jax.vmap(symbolic.observe)(state), "reward": reward, "done": done,
                    "achievements": info["achievements"]}
            return state, seen

        return jax.lax.scan(one, state, jax.random.split(key, STEPS))

    return jax.jit(run)


def test_unrolled_step_is_bit_identical_over_many_steps_pixels_included():
    params = make_params(CONFIGS).params
    _, state = jax.jit(jax.vmap(CrafterEnv().reset))(jax.random.split(jax.random.PRNGKey(3), len(CONFIGS)),
                                                             params)
    key = jax.random.PRNGKey(7)
    traced = {variant: _steps(variant, params).trace(key, state) for variant in ("scan", "unrolled")}
    # the short loops are gone from what a GPU compiles (jax.random's own loops are rolled only on a CPU)
    cuda = {v: t.lower(lowering_platforms=("cuda",)).as_text().count("stablehlo.while") for v, t in traced.items()}
    assert cuda["unrolled"] * 4 < cuda["scan"], cuda
    out = {v: jax.device_get(t.lower().compile()(key, state)) for v, t in traced.items()}
    (final_scan, seen_scan), (final_unrolled, seen_unrolled) = out["scan"], out["unrolled"]
    jax.tree.map(np.testing.assert_array_equal, seen_unrolled, seen_scan)
    jax.tree.map(np.testing.assert_array_equal, final_unrolled, final_scan)
    # what ran is worth comparing: rewards paid, episodes ended, mobs in view, the pixels changing
    assert seen_scan["done"].any() and np.abs(seen_scan["reward"]).sum() > 0
    local_view = np.asarray(seen_scan["symbolic"])[..., :7 * 9 * 21].reshape(STEPS, len(CONFIGS), 7, 9, 21)
    assert local_view[..., 17:].any()  # a zombie, cow, skeleton or arrow on screen
    assert len({seen_scan["pixels"][t].tobytes() for t in range(STEPS)}) > STEPS // 2
