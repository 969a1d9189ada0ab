"""Evaluate the current policy of every seed in any bank/rows, with static shapes.

    evaluator = make_evaluator(trainer, num_envs=32, episodes_per_env=2, max_steps=2000, game=games.get("crafter"))
    report = evaluator.evaluate(ts.params, bank, rows, key=0, mode="sample")   # EvalReport (host, numpy)
    report.success_mean["collect_wood"], report.success_std[...], report.score_mean (the game's score), ...

On device: a `lax.while_loop` over at most `max_steps` vector-env steps (fresh envs reset at the start), stopped
early once every env of every seed has finished `episodes_per_env` episodes; episodes beyond that count, and
episodes still running at the budget, are not counted (the count is reported, so a short budget shows up as
fewer episodes, never as made-up values). Returns RowStats [S, K] (metrics.py). The seeds run side by side as the
trainer's do (`execution.seed_axis`: vmapped, or one after another).

Modes: "sample" (the stochastic policy, as trained), "greedy" (argmax), "random" (uniform actions; the random-policy
baseline through the very same evaluator; params are ignored). The mode is a traced argument: one compile serves
all three.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envgen_jax.trainer.ahead import AheadOfTime, Program
from envgen_jax.trainer.layouts import layout, rows_axis
from envgen_jax.trainer.metrics import (RowStats, across_seeds, mean_or_nan, nan_to_none, pool_rows,
                                        row_stats_from_steps, success_rates, to_host)
from envgen_jax.trainer.networks import policy
from envgen_jax.trainer.reuse import reused
from envgen_jax.trainer.train import Trainer, prng_key
from envgen_jax.trainer.train import default_vecenv as _default_vecenv

if TYPE_CHECKING:
    from envgen_jax.envs.game import Game

MODES = ("sample", "greedy", "random")


@dataclasses.dataclass
class EvalReport:
    """Host-side evaluation summary. Per-seed arrays have a leading seed axis [S].

    Success rates are fractions in [0, 1]; the score is the game's own (`Game.score`, in percent), computed per seed
    from that seed's pooled rates (`score_pooled` pools every seed's episodes first). Means over seeds skip seeds
    that finished no episode (their per-seed values are NaN); `episodes` says how many each seed finished.
    `score_key` (`Game.score_key`) names the score in `to_dict`."""

    achievement_names: tuple[str, ...]
    episodes: np.ndarray  # i32[S]
    success: np.ndarray  # f32[S, A]
    mean_return: np.ndarray  # [S]
    mean_length: np.ndarray  # [S]
    score: np.ndarray  # [S]
    success_mean: dict[str, float]
    success_std: dict[str, float]
    return_mean: float
    return_std: float
    score_mean: float
    score_std: float
    score_pooled: float
    score_key: str
    stats: RowStats  # host RowStats [S, K] (not pooled over rows)

    def to_dict(self) -> dict:
        f, key = nan_to_none, self.score_key
        return {
            "episodes_per_seed": [int(e) for e in self.episodes],
            "success_mean": {k: f(v) for k, v in self.success_mean.items()},
            "success_std": {k: f(v) for k, v in self.success_std.items()},
            "return_mean": f(self.return_mean), "return_std": f(self.return_std),
            "mean_return_per_seed": [f(r) for r in self.mean_return],
            "mean_length_mean": f(np.nanmean(self.mean_length)) if np.any(self.episodes > 0) else None,
            f"{key}_mean": f(self.score_mean), f"{key}_std": f(self.score_std),
            f"{key}_pooled": f(self.score_pooled),
            f"{key}_per_seed": [f(s) for s in self.score],
        }


def report_from_stats(stats: RowStats, achievement_names: Sequence[str], rows: Sequence[int] | None = None,
                      ddof: int = 0, *, game: Game) -> EvalReport:
    """EvalReport from host RowStats [S, K] (pooled over `rows`, default all), scored by `game.score`."""
    stats = to_host(stats)
    pooled = pool_rows(stats, rows)  # [S], [S, A]
    rates = success_rates(pooled)  # [S, A]
    score = game.score(rates)  # [S]
    mret = mean_or_nan(pooled.return_sum, pooled.episodes)
    s_mean, s_std, _ = across_seeds(rates, ddof)
    r_mean, r_std, _ = across_seeds(mret, ddof)
    c_mean, c_std, _ = across_seeds(score, ddof)
    all_eps = jax.tree.map(lambda x: x.sum(axis=0), pooled)
    names = tuple(achievement_names)
    return EvalReport(
        achievement_names=names, episodes=np.asarray(pooled.episodes), success=rates, mean_return=mret,
        mean_length=mean_or_nan(pooled.length_sum, pooled.episodes), score=score,
        success_mean=dict(zip(names, s_mean)), success_std=dict(zip(names, s_std)),
        return_mean=float(r_mean), return_std=float(r_std), score_mean=float(c_mean), score_std=float(c_std),
        score_pooled=float(game.score(success_rates(all_eps))),
        score_key=game.score_key, stats=stats)


class Evaluator:
    """Jitted evaluation for one trainer's network and env. Compiles once per (num_envs, max_steps, episodes_per_env,
    K); params, bank, rows, keys and the mode are traced. `game` scores `evaluate`'s summaries (`run` needs none)."""

    def __init__(self, trainer: Trainer, num_envs: int, episodes_per_env: int, max_steps: int, venv=None,
                 game: Game | None = None):
        self.trainer, self.game = trainer, game
        self.num_envs = num_envs
        self.episodes_per_env = episodes_per_env
        self.max_steps = max_steps
        self.venv = venv if venv is not None else _default_vecenv(trainer.env, trainer.cfg, num_envs)
        self.trace_count = 0
        self._jit = Program(self._run, static_argnames=("key_period",))
        self.ahead = AheadOfTime()  # the program compiled in a thread (`precompile`)

    def _act(self, params, memory, obs, key, mode):
        """(memory, action): the policy's step (a recurrent one carries each slot's memory)."""
        k_pi, k_rand = jax.random.split(key)
        memory, logits, _ = self.trainer.act(params, memory, obs)
        sampled = policy(logits).sample(seed=k_pi)
        greedy = jnp.argmax(logits, axis=-1)
        uniform = jax.random.randint(k_rand, (self.num_envs,), 0, self.trainer.num_actions)
        return memory, jnp.select([mode == 0, mode == 1], [sampled, greedy], uniform).astype(sampled.dtype)

    def _run_one(self, params, key, bank, rows, mode):
        num_rows = bank.num_rows
        k_reset, k_loop = jax.random.split(key)
        obs, env_state = self.venv.reset(k_reset, bank, rows)
        counts = jnp.zeros((self.num_envs,), jnp.int32)
        acc = RowStats.zeros(num_rows, len(self.trainer.achievement_names))

        def cond(c):
            t, _, _, _, counts, _, _ = c
            return (t < self.max_steps) & jnp.any(counts < self.episodes_per_env)

        def body(c):
            t, obs, env_state, memory, counts, acc, key = c
            key, k_act, k_env = jax.random.split(key, 3)
            memory, action = self._act(params, memory, obs, k_act, mode)
            obs, env_state, info = self.venv.step(k_env, env_state, action, bank, rows)
            mask = info.done & (counts < self.episodes_per_env)
            acc = acc + row_stats_from_steps(info, num_rows, count_mask=mask)
            memory = self.trainer.forget(memory, info.done)
            return t + 1, obs, env_state, memory, counts + mask.astype(jnp.int32), acc, key

        c = (jnp.int32(0), obs, env_state, self.trainer.initial_memory(self.num_envs), counts, acc, k_loop)
        t, _, _, _, counts, acc, _ = jax.lax.while_loop(cond, body, c)
        return acc, t

    def _run(self, params, key, fold_in, bank, rows, mode, key_period: int | None = None):
        self.trace_count += 1
        key = jnp.where(fold_in >= 0, jax.random.fold_in(key, fold_in), key)
        agents = jax.tree.leaves(params)[0].shape[0]
        # Agent i evaluates with key i of `key_period` keys (default: one per agent), so that in a fused study
        # (methods x seeds on one axis) seed s of every method gets the key seed s gets in a run of its method alone.
        keys = jnp.tile(jax.random.split(key, key_period or agents), (agents // (key_period or agents), 1))
        return self.trainer.over_seeds(self._run_one, (0, 0, None, rows_axis(rows), None))(params, keys, bank, rows,
                                                                                            mode)

    def run(self, params, bank, rows, key, mode: str = "sample", fold_in: int = -1,
            key_period: int | None = None) -> tuple[RowStats, jax.Array]:
        """Device RowStats [S, K] and the steps taken [S]. params: the TrainState's params (seed axis [S]);
        key: u32[2] or an int seed, first folded with `fold_in` when it is >= 0, then split into one key per seed
        (inside the compiled program: the host compiles nothing), or with `key_period` into that many keys, agent i
        taking key i mod key_period (a fused study's methods x seeds); mode: sample | greedy | random."""
        args = self._arguments(params, bank, rows, key, mode, fold_in)
        static = {"key_period": key_period} if key_period else {}
        compiled = self.ahead.get(args, static)
        return compiled(*args) if compiled is not None else self._jit(*args, **static)

    def precompile(self, params, bank, rows, key=0, mode: str = "sample", key_period: int | None = None) -> None:
        """Start compiling `run` for these arguments' types in a background thread (arrays only read for their
        shapes); a later `run` or `evaluate` with the same types runs that program."""
        self.ahead.submit(self._jit, self._arguments(params, bank, rows, key, mode, -1),
                          {"key_period": key_period} if key_period else {})

    def _arguments(self, params, bank, rows, key, mode, fold_in) -> tuple:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if isinstance(key, (int, np.integer)):
            key = prng_key(int(key))
        return params, key, np.int32(fold_in), bank, layout(rows), np.int32(MODES.index(mode))

    def evaluate(self, params, bank, rows, key=0, mode: str = "sample", report_rows: Sequence[int] | None = None,
                 ddof: int = 0, fold_in: int = -1) -> EvalReport:
        """Run and summarise on the host, with the game's score; `report_rows` pools only those bank rows (default:
        all)."""
        if self.game is None:  # no game, no score: never the Crafter score of another game's rates
            raise ValueError("this evaluator was made without its game, so it has no score to summarise with; "
                             "give make_evaluator(..., game=games.get(name))")
        stats, _ = self.run(params, bank, rows, key, mode, fold_in)
        return report_from_stats(stats, self.trainer.achievement_names, report_rows, ddof, game=self.game)


def make_evaluator(trainer: Trainer, num_envs: int, episodes_per_env: int, max_steps: int, venv=None,
                   game: Game | None = None) -> Evaluator:
    """An Evaluator; without `venv`, the one made earlier in this process for the same trainer and sizes, its
    program already compiled (`trainer.reuse`)."""
    if venv is not None:
        return Evaluator(trainer, num_envs, episodes_per_env, max_steps, venv, game)
    return reused(("evaluator", trainer, num_envs, episodes_per_env, max_steps, game),
                  lambda: Evaluator(trainer, num_envs, episodes_per_env, max_steps, None, game))
