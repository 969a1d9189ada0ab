"""Craftax's short per-step loops traced unrolled, the experiment outside the package (benchmarks/unrolled_loops.py,
until a GPU measures it faster): the same outputs bit for bit as craftax's scans, with fewer loops in the program."""

from __future__ import annotations

import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks.unrolled_loops import UnrolledCrafterEnv, make_env, short_loops_unrolled, unrolled_crafter
from envgen_jax import games
from envgen_jax.envs.crafter import CrafterConfig, CrafterEnv, make_params
from envgen_jax.envs.crafter.game import UNROLLED_MOVED
from envgen_jax.envs.draws import weighted_choice
from envgen_jax.run_config import load_run_config
from envgen_jax.schema import ConfigError


def _toy(carry, x):
    # integer arithmetic: this checks the loop's semantics (carry, order, stacking), exactly; whether float code
    # comes out of XLA bit for bit once the loop is gone is a property of the body, checked on craftax's step below
    carry = carry * 3 + x["a"] * x["b"]
    return carry, {"sum": carry + x["a"], "b": x["b"] % 2 == 0}


def test_short_scans_run_as_python_loops_with_scans_semantics():
    xs = {"a": jnp.arange(5, dtype=jnp.int32) - 2, "b": jnp.arange(10, 15, dtype=jnp.int32)}
    init = jnp.int32(1)
    original = jax.lax.scan
    for reverse in (False, True):
        expected = jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs, reverse=reverse))(init, xs)  # noqa: B023
        with short_loops_unrolled(max_length=8):
            assert jax.lax.scan is not original
            lowered = jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs, reverse=reverse)).lower(init, xs)  # noqa: B023
        assert "stablehlo.while" not in lowered.as_text()
        got = lowered.compile()(init, xs)
        jax.tree.map(np.testing.assert_array_equal, got, expected)
    # length without xs, and a body with no per-iteration outputs
    with short_loops_unrolled(max_length=8):
        carry, ys = jax.lax.scan(lambda c, _: (c + 1, None), 0, length=4)
    assert int(carry) == 4 and ys is None
    # longer scans are left to jax.lax.scan; the original comes back on leaving
    with short_loops_unrolled(max_length=3):
        text = jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs)).lower(init, xs).as_text()
    assert "stablehlo.while" in text and jax.lax.scan is original


def test_the_unrolling_is_the_tracing_threads_alone():
    """A run traces its training chunk and its evaluation in two threads at once (trainer/ahead.py): while one thread
    is inside the context, a scan traced in another keeps its loop, and each thread's own context still unrolls."""
    xs = {"a": jnp.arange(5, dtype=jnp.int32), "b": jnp.arange(5, dtype=jnp.int32)}
    loops = lambda: jax.jit(lambda i, xs: jax.lax.scan(_toy, i, xs)).lower(jnp.int32(1), xs).as_text()  # noqa: E731
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with short_loops_unrolled(max_length=8):
            inside.set()
            leave.wait(60)

    original = jax.lax.scan
    other = threading.Thread(target=hold)
    other.start()
    try:
        assert inside.wait(60)
        assert "stablehlo.while" in loops()  # this thread is outside: jax as it is
        with short_loops_unrolled(max_length=8):
            assert "stablehlo.while" not in loops()
        assert "stablehlo.while" in loops() and jax.lax.scan is not original  # the other's is still open
    finally:
        leave.set()
        other.join()
    assert jax.lax.scan is original


def _draws(key, weights, mask):
    # the forms craftax and our world generation use: an int population, an array population, plateaus of zero
    # weight (masked cells), one draw and several
    return {"int": jax.random.choice(key, 6, (5,), p=weights),
            "array": jax.random.choice(key, jnp.arange(10, 16), (1,), p=weights),
            "masked": jax.random.choice(key, jnp.arange(6), p=weights * mask / jnp.maximum((weights * mask).sum(), 1)),
            "plain": jax.random.choice(key, 6, (3,))}


def test_weighted_choice_draws_the_same_without_its_search_loop():
    weights = jnp.array([0.1, 0.0, 0.3, 0.25, 0.0, 0.35], jnp.float32)
    mask = jnp.array([0, 1, 1, 0, 1, 1], jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(11), 64)
    draws = jax.jit(jax.vmap(_draws, in_axes=(0, None, None)))
    expected = draws(keys, weights, mask)
    original = jax.random.choice
    with short_loops_unrolled():
        traced = jax.jit(jax.vmap(_draws, in_axes=(0, None, None))).trace(keys, weights, mask)
    assert jax.random.choice is original
    jax.tree.map(np.testing.assert_array_equal, traced.lower().compile()(keys, weights, mask), expected)
    # the bank-row draw's form (RowSampler.draw), called directly; a single row
    np.testing.assert_array_equal(jax.vmap(lambda k: weighted_choice(k, 6, (5,), weights))(keys), expected["int"])
    for one in (jnp.ones(1), jnp.zeros(1)):
        np.testing.assert_array_equal(weighted_choice(keys[0], 1, (3,), one), jax.random.choice(keys[0], 1, (3,), p=one))
    assert len(set(np.asarray(expected["int"]).ravel().tolist())) == 4  # every weighted value drawn, none of weight 0
    # jnp.searchsorted's loop is gone (jax.random's threefry is a loop only in a CPU's lowering)
    assert "stablehlo.while" in draws.trace(keys, weights, mask).lower(lowering_platforms=("cuda",)).as_text()
    assert "stablehlo.while" not in traced.lower(lowering_platforms=("cuda",)).as_text()


def test_the_package_keeps_craftaxs_loops_and_the_experiment_swaps_the_game_in_the_registry():
    crafter = games.get("crafter")
    assert type(crafter.make_env("pixels", {"step_loops": "scan"})) is CrafterEnv  # older configurations load
    with pytest.raises(ConfigError) as err:
        crafter.read_options({"step_loops": "unrolled"})
    assert err.value.problems == [UNROLLED_MOVED.format(where="game_options")]  # one line: where it went
    assert "\n" not in err.value.problems[0] and "benchmarks/unrolled_loops.py" in err.value.problems[0]
    found = []  # a run configuration's reader collects it with the options' other problems
    assert crafter.read_options({"step_loops": "unrolled", "speed": 2}, problems=found) is None
    assert found == [UNROLLED_MOVED.format(where="game_options"), "game_options.speed: unknown setting; allowed: "
                     "step_loops"]
    with pytest.raises(ConfigError, match="moved out of the package to benchmarks/unrolled_loops.py"):
        load_run_config(None, ["env=crafter", "game_options.step_loops=unrolled"])
    assert load_run_config(None, ["env=crafter", "game_options.step_loops=scan"]).game_options.step_loops == "scan"
    with unrolled_crafter():
        assert type(games.get("crafter").make_env("pixels")) is UnrolledCrafterEnv
        # the launcher reads what it refers older configurations to, and runs them unrolled
        older = load_run_config(None, ["env=crafter", "game_options.step_loops=unrolled"])
        assert type(games.get("crafter").make_env("pixels", older.game_options)) is UnrolledCrafterEnv
    assert games.get("crafter") is crafter and type(make_env("scan")) is CrafterEnv
    with pytest.raises(ValueError, match="variant: 'fast' is not one of 'scan', 'unrolled'"):
        make_env("fast")


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
    pixels, symbolic = make_env(step_loops, "pixels"), make_env(step_loops, "symbolic")
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
    keys = jax.random.split(jax.random.PRNGKey(3), len(CONFIGS))
    _, state = jax.jit(jax.vmap(CrafterEnv().reset))(keys, params)
    # world generation too (its diamond is a weighted draw): the same worlds, no loop for a GPU
    reset = jax.jit(jax.vmap(UnrolledCrafterEnv().reset)).trace(keys, params)
    assert "stablehlo.while" not in reset.lower(lowering_platforms=("cuda",)).as_text()
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(reset.lower().compile()(keys, params)[1]),
                 jax.device_get(state))
    key = jax.random.PRNGKey(7)
    traced = {variant: _steps(variant, params).trace(key, state) for variant in ("scan", "unrolled")}
    # what a GPU compiles keeps one loop, the STEPS steps' own scan (jax.random's loops are rolled only on a CPU)
    cuda = {v: t.lower(lowering_platforms=("cuda",)).as_text().count("stablehlo.while") for v, t in traced.items()}
    assert cuda["unrolled"] == 1 < cuda["scan"], cuda
    out = {v: jax.device_get(t.lower().compile()(key, state)) for v, t in traced.items()}
    (final_scan, seen_scan), (final_unrolled, seen_unrolled) = out["scan"], out["unrolled"]
    jax.tree.map(np.testing.assert_array_equal, seen_unrolled, seen_scan)
    jax.tree.map(np.testing.assert_array_equal, final_unrolled, final_scan)
    # what ran is worth comparing: rewards paid, episodes ended, mobs in view, the pixels changing
    assert seen_scan["done"].any() and np.abs(seen_scan["reward"]).sum() > 0
    local_view = np.asarray(seen_scan["symbolic"])[..., :7 * 9 * 21].reshape(STEPS, len(CONFIGS), 7, 9, 21)
    assert local_view[..., 17:].any()  # a zombie, cow, skeleton or arrow on screen
    assert len({seen_scan["pixels"][t].tobytes() for t in range(STEPS)}) > STEPS // 2
