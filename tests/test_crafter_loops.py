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
from envgen_jax.envs.vector import VecEnv
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


# Worlds with many mobs, short days and short episodes: zombies, cows, skeletons, arrows, night spawns, deaths and
# auto-resets (world generation and the spare's render) all run within the steps below.
CONFIGS = [CrafterConfig.original(),
           CrafterConfig.from_dict({"environment_settings": {"target_biome": "mountain"},
                                    "creature_settings": {"zombies": "very common", "skeletons": "very common"},
                                    "episode_settings": {"episode_length": 64, "day_length": 50}}),
           CrafterConfig.from_dict({"environment_settings": {"target_biome": "grassland"},
                                    "creature_settings": {"cows": "very common", "zombies": "very common"},
                                    "inventory_settings": {"wood_sword": 1, "sapling": 3},
                                    "episode_settings": {"episode_length": 64, "day_length": 50}})]
NUM_ENVS, STEPS = 3, 100


def _rollout(step_loops: str):
    """A jitted rollout of random actions through VecEnv (pixels), keeping every step's pixels, symbolic view,
    rewards, dones and achievements, and the final state; and its lowered program."""
    pixels = CrafterEnv("pixels", step_loops=step_loops)
    symbolic = CrafterEnv("symbolic", step_loops=step_loops)
    venv = VecEnv(pixels, NUM_ENVS, resets_per_step=1)
    bank = make_params(CONFIGS)
    rows = jnp.arange(NUM_ENVS, dtype=jnp.int32) % len(CONFIGS)

    def run(key):
        key, k_reset = jax.random.split(key)
        obs, vstate = venv.reset(k_reset, bank, rows)

        def one(vstate, k):
            k_act, k_env = jax.random.split(k)
            actions = jax.random.randint(k_act, (NUM_ENVS,), 0, pixels.num_actions)
            obs, vstate, info = venv.step(k_env, vstate, actions, bank, rows)
            seen = {"pixels": obs, "symbolic": jax.vmap(symbolic.observe)(vstate.env), "reward": info.reward,
                    "done": info.done, "achievements": info.achievements}
            return vstate, seen

        return jax.lax.scan(one, vstate, jax.random.split(key, STEPS))

    return jax.jit(run).lower(jax.random.PRNGKey(7))


def test_unrolled_step_is_bit_identical_over_many_steps_pixels_included():
    lowered = {variant: _rollout(variant) for variant in ("scan", "unrolled")}
    loops = {variant: low.as_text().count("stablehlo.while") for variant, low in lowered.items()}
    assert loops["unrolled"] < loops["scan"], loops  # the short loops are gone (random's own and the rollout stay)
    out = {variant: jax.device_get(low.compile()(jax.random.PRNGKey(7))) for variant, low in lowered.items()}
    (final_scan, seen_scan), (final_unrolled, seen_unrolled) = out["scan"], out["unrolled"]
    jax.tree.map(np.testing.assert_array_equal, seen_unrolled, seen_scan)
    jax.tree.map(np.testing.assert_array_equal, final_unrolled, final_scan)
    # what ran is worth comparing: mobs spawned, episodes ended, rewards paid, the pixels changed
    assert seen_scan["done"].sum() >= NUM_ENVS - 1 and np.abs(seen_scan["reward"]).sum() > 0
    assert (np.asarray(seen_scan["symbolic"])[..., :63 * 21].reshape(STEPS, NUM_ENVS, 7, 9, 21)[..., 17:]).any()
    assert len({seen_scan["pixels"][t].tobytes() for t in range(STEPS)}) > STEPS // 2
