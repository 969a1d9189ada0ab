"""PPO in one jit-compiled training chunk, with independent agents (seeds) vmapped.

    trainer = make_trainer(env, TrainerConfig(...))    # trainer.factory
    ts = trainer.init(bank, rows)                      # TrainState, leading seed axis [S] on every leaf
    ts, metrics = trainer.train_chunk(ts, bank, rows, num_updates=8)   # jitted; `ts` is donated
    host = to_host(metrics)                            # ChunkMetrics: RowStats [S, K], LossStats [S, U]
    ts = trainer.reset_envs(ts, new_bank, new_rows)    # after the LLM step changed rows that slots run

One chunk = `lax.scan` over `num_updates` PPO updates (`ppo.PPO.update`). The host acts only between chunks (the
EnvGen LLM step goes there). With a level sampler (robust PLR) `make_trainer` gives a `replay.ReplayTrainer`.
`make_trainer` lives in `trainer.factory`, above both trainers: neither module imports the other.

* `bank` (an `envs.bank.Bank`: env params with leading K rows) and `rows` (a layout, `trainer.layouts`: i32[N]
  shared by all seeds, or i32[S, N] per seed; or `envs.vector.RowSampler(probs)` with probs f32[K] or [S, K]: every
  episode's row drawn from probs) are traced arguments: new values never recompile; a new K or N does (it changes
  shapes). Per-seed configs (one LLM per seed): stack every seed's rows into one bank and give rows [S, N] pointing
  into each seed's block.
* `TrainerConfig` is static (frozen, hashable): shapes, loop sizes and switches are part of the compiled program, so a
  new config compiles a new trainer. The per-agent numbers (`ppo.Hyperparams`: lr, gamma, ...) are traced values in
  the TrainState, taken from the config unless `init(hparams=...)` gives others.
* Seeds: seed `s` starts from `jax.random.PRNGKey(s)`; `init(seeds=[3])` trains exactly the agent that is row i of
  `init(seeds=[..., 3, ...])` (equal up to float reassociation of the vmapped matmuls). Every leaf of a TrainState
  carries the seed axis, also with one seed; `select_seeds` slices it.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from envgen_jax.envs.vector import SampledVecState, VecEnv
from envgen_jax.schema import ConfigError
from envgen_jax.trainer import migrations, minibatch
from envgen_jax.trainer.ahead import AheadOfTime, Program
from envgen_jax.trainer.layouts import draws_rows, layout, rows_axis
from envgen_jax.trainer.encoders import make_network as build_network
from envgen_jax.trainer.metrics import ChunkMetrics, RowStats, row_stats_from_steps
from envgen_jax.trainer.networks import ActorCritic, Agent
from envgen_jax.trainer.ppo import HYPERPARAMS, PPO, Hyperparams, PPOAlgorithm, TrainerConfig, TrainState, ValueNorm


def default_vecenv(env, cfg: TrainerConfig, num_envs: int) -> VecEnv:
    return VecEnv(env, num_envs, cfg.execution.resets_per_step)


def over_seeds(fn, in_axes: tuple, how: str = "vmap"):
    """`fn` over the seed axis of the arguments whose `in_axes` entry is 0 (the others shared): vmapped, or with
    how='map' one seed after another (lax.map), which keeps each seed's convolutions dense (`execution.seed_axis`)."""
    if how == "vmap":
        return jax.vmap(fn, in_axes=in_axes)

    def one_after_another(*args):
        def one(per_seed):
            per_seed = iter(per_seed)
            return fn(*(next(per_seed) if axis == 0 else arg for arg, axis in zip(args, in_axes)))

        return jax.lax.map(one, tuple(arg for arg, axis in zip(args, in_axes) if axis == 0))

    return one_after_another


def select_seeds(tree, idx: int | Sequence[int] | slice) -> Any:
    """Slice the leading seed axis of a TrainState / metrics pytree; the axis is kept (an int selects [idx])."""
    if not isinstance(idx, slice):
        idx = np.atleast_1d(np.asarray(idx))
    return jax.tree.map(lambda x: x[idx], tree)


def prng_key(seed: int) -> np.ndarray:
    """jax.random.PRNGKey(seed) as a host array, made without compiling anything: the threefry key of a 32-bit seed
    is [0, seed mod 2^32] (tests/test_ppo.py checks it against JAX; another PRNG implementation asks JAX)."""
    seed = int(seed)
    if jax.config.jax_default_prng_impl != "threefry2x32" or not -2**31 <= seed < 2**31:
        return np.asarray(jax.random.PRNGKey(seed))
    return np.array([0, seed & 0xFFFFFFFF], np.uint32)


def seed_keys(seeds: Sequence[int]) -> np.ndarray:
    """u32[S, 2]: jax.random.PRNGKey(seed) for each seed (host arrays: `prng_key`)."""
    return np.stack([prng_key(s) for s in seeds])


def agent_hparams(ppo: PPOAlgorithm, values: dict | None = None, count: int | None = None) -> Hyperparams:
    """Hyperparams for `count` agents (a leading axis), from the algorithm's settings `ppo` with `values`
    overriding: each a number or a sequence of `count` numbers (one per agent)."""
    values = dict(values or {})
    unknown = sorted(set(values) - set(HYPERPARAMS))
    if unknown:
        raise ConfigError([f"hparams: {', '.join(unknown)} cannot vary per agent (one of {', '.join(HYPERPARAMS)})"],
                          what="PPO settings")
    out = {}
    for name in HYPERPARAMS:
        v = np.asarray(values.get(name, getattr(ppo, name)), np.float32)
        if count is not None:
            v = np.broadcast_to(v, (count,)) if v.ndim == 0 else v
            if v.shape != (count,):
                raise ConfigError([f"hparams.{name}: {v.shape[0]} values for {count} agents"], what="PPO settings")
        out[name] = jax.device_put(np.ascontiguousarray(v))
    return Hyperparams(**out)


def make_network(env, cfg: TrainerConfig) -> ActorCritic:
    """The actor-critic of `cfg.network` for `env`'s observations (ConfigError where its encoder cannot read them)."""
    return build_network(env, cfg.network, cfg.execution.compute_dtype, cfg.execution.conv_as_matmul)


class Trainer:
    """PPO trainer for one env and one static TrainerConfig. Build with `factory.make_trainer(env, cfg)`.

    Public:
      init(bank, rows, seeds=None, hparams=None, episodes=True) -> TrainState  (jitted; episodes=False: blank
        env slots for a first train_chunk(..., reset=True), a program that compiles fast)
      train_chunk(ts, bank, rows, num_updates, reset=False) -> (TrainState, ChunkMetrics)   (jitted; ts donated;
        `reset`, data: fresh episodes from `rows` first, as reset_envs, in the same program)
      compile_train_chunk(ts, bank, rows, num_updates): the same, compiled ahead of time
      precompile_chunk(ts, bank, rows, num_updates): compile it in a background thread for a later train_chunk
      reset_envs(ts, bank, rows) -> TrainState   fresh episodes after a mixture change (jitted; ts donated)
      abstract_state(bank, rows, seeds=None) -> TrainState of ShapeDtypeStructs (for checkpoint restore)
      restore(path, bank, rows, seeds=None) -> TrainState from a checkpoint (`migrations`: also older layouts)
      agent_state(state) -> the agent's TrainState (the state itself here; a ReplayTrainer's holds one)
      apply / act / initial_memory / forget: the network (`networks.Agent`); values are de-normalised only in
        training (the evaluator and probes use logits)
    Attributes: env, cfg, venv, network, agent, ppo, tx, over_seeds (`over_seeds` on cfg.execution.seed_axis),
    trace_counts (dict: Python traces per jitted function; eval_shape via abstract_state counts as an init trace).
    Counters are int32: env_steps overflows past 2.1e9 env steps per seed.
    """

    def __init__(self, env, cfg: TrainerConfig, venv=None):
        self.env, self.cfg = env, cfg
        self.venv = venv if venv is not None else default_vecenv(env, cfg, cfg.ppo.num_envs)
        self.obs_shape, self.num_actions = tuple(env.obs_shape), int(env.num_actions)
        self.achievement_names = tuple(env.achievement_names)
        self.network = make_network(env, cfg)
        self.agent = Agent(self.network)
        self.recurrent = self.agent.recurrent
        self.ppo = PPO(cfg.ppo, self.agent, self.venv, minibatch.minibatcher(self.recurrent))
        self.tx = self.ppo.optimizer(np.float32(cfg.ppo.lr))
        self.apply, self.act = self.agent.apply, self.agent.act
        self.initial_memory, self.forget = self.agent.initial_memory, self.agent.forget
        self.over_seeds = functools.partial(over_seeds, how=cfg.execution.seed_axis)  # training, init and evaluation
        self.trace_counts = {"init": 0, "train_chunk": 0, "reset_envs": 0}
        self._init_jit = Program(self._init)
        self._init_blank_jit = Program(self._init_blank)
        self._reset_jit = Program(self._reset_envs, donate_argnums=(0,))
        self._chunk_jit = Program(self._train_chunk, static_argnames=("num_updates",), donate_argnums=(0,))
        self.ahead = AheadOfTime()  # train_chunk programs compiled in a thread (`precompile_chunk`)

    def hparams(self, values: dict | None = None, count: int | None = None) -> Hyperparams:
        """Hyperparams for `count` agents from the config's, `values` overriding (`agent_hparams`)."""
        return agent_hparams(self.cfg.ppo, values, count)

    def agent_state(self, state) -> TrainState:
        return state

    # -- init -----------------------------------------------------------------------------------------------
    def _seeds(self, seeds):
        seeds = self.cfg.agent_seeds if seeds is None else tuple(int(s) for s in np.atleast_1d(seeds))
        return seed_keys(seeds)

    def _venv_reset(self, key, bank, rows):
        obs, env_state = self.venv.reset(key, bank, rows)
        # Strong dtypes: a weak-typed leaf from an env reset would make the chunk's output differ from its input
        # in weak_type and cost a second compile of train_chunk.
        return obs, jax.tree.map(lambda x: x.astype(x.dtype), env_state)

    def _init_params(self, key):
        """One seed's network parameters (from the first of the seed key's three splits)."""
        k_params, _, _ = jax.random.split(key, 3)
        return self.agent.init(k_params)

    def _init_one(self, key, params, hparams, bank, rows, episodes: bool = True):
        _, k_reset, k_run = jax.random.split(key, 3)
        if episodes:
            obs, env_state = self._venv_reset(k_reset, bank, rows)
        else:  # zeros in the reset's shapes and types: no world is made, so the program compiles fast
            obs, env_state = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype),
                                          jax.eval_shape(self._venv_reset, k_reset, bank, rows))
        return TrainState(params=params, opt_state=self.tx.init(params), env_state=env_state, obs=obs, key=k_run,
                          update_step=jnp.int32(0), env_steps=jnp.int32(0), hparams=hparams,
                          value_norm=ValueNorm.empty() if self.cfg.ppo.value_norm else None,
                          memory=self.initial_memory(self.cfg.ppo.num_envs))

    def _init(self, keys, hparams, bank, rows, episodes: bool = True):
        self.trace_counts["init"] += 1
        # Parameters are made one seed at a time (lax.map, not vmap): vmapping the orthogonal initialisers (QR
        # decompositions, LAPACK custom calls) over seeds deadlocked jaxlib 0.10's CPU runtime once a program held
        # six or more of them (tests/test_ppo.py::test_init_many_seeds_does_not_hang).
        params = jax.lax.map(self._init_params, keys)
        one = functools.partial(self._init_one, episodes=episodes)
        return self.over_seeds(one, (0, 0, 0, None, rows_axis(rows)))(keys, params, hparams, bank, rows)

    def _init_blank(self, keys, hparams, bank, rows):
        return self._init(keys, hparams, bank, rows, episodes=False)

    def init(self, bank, rows, seeds: Sequence[int] | None = None, hparams: dict | Hyperparams | None = None,
             episodes: bool = True):
        """Fresh TrainState for `seeds` (default cfg.agent_seeds); envs reset into `rows` of `bank`.

        `hparams`: per-agent PPO settings (a dict name -> a number or one number per seed, or a Hyperparams with a
        leading seed axis); the rest come from the config. A sweep is seeds repeated with different hparams:
        `init(bank, rows, seeds=[0, 0, 1, 1], hparams={"lr": [1e-4, 3e-4, 1e-4, 3e-4]})`; agent i trains exactly
        as a single-agent run with those values.

        `episodes=False`: the env slots are left blank (zeros), for a first `train_chunk(..., reset=True)` (or
        `reset_envs`) to fill, which then trains exactly as after `init(...)`: the reset draws its worlds from the
        state's key, which the init's own worlds do not use. Its program makes no world, and world generation is
        most of what an init costs to compile (the loop starts every phase with fresh episodes, so it inits so)."""
        keys = self._seeds(seeds)
        if not isinstance(hparams, Hyperparams):
            hparams = self.hparams(hparams, count=keys.shape[0])
        return (self._init_jit if episodes else self._init_blank_jit)(keys, hparams, bank, layout(rows))

    def _reset_one(self, ts: TrainState, bank, rows) -> TrainState:
        key, k_reset = jax.random.split(ts.key)
        obs, env_state = self._venv_reset(k_reset, bank, rows)
        return ts.replace(obs=obs, env_state=env_state, key=key, memory=self.initial_memory(self.cfg.ppo.num_envs))

    def _reset_envs(self, ts, bank, rows):
        self.trace_counts["reset_envs"] += 1
        return self.over_seeds(self._reset_one, (0, None, rows_axis(rows)))(ts, bank, rows)

    def reset_envs(self, ts, bank, rows):
        """Fresh episodes in every env slot from `rows` of `bank` (params and optimiser kept; `ts` is donated).

        Call it after changing the mixture (which row each slot runs) or the contents of rows that slots run:
        running episodes, and the VecEnv's pre-generated spare worlds, were built from the old rows, so without a
        reset their lengths, returns and achievements would mix two configs. Writing only rows that no slot runs
        needs no reset. (Costs one world generation per env slot, plus the spares.)"""
        return in_its_layout(lambda ts: self._reset_jit(ts, bank, layout(rows)), ts)

    def abstract_state(self, bank, rows, seeds: Sequence[int] | None = None):
        keys = self._seeds(seeds)
        hparams = jax.eval_shape(lambda: self.hparams(count=keys.shape[0]))
        return jax.eval_shape(self._init, keys, hparams, bank, layout(rows))

    def restore(self, path, bank, rows, seeds: Sequence[int] | None = None):
        """The state saved at `path`, also from a checkpoint an older version wrote (`trainer.migrations`)."""
        return migrations.restore_state(self, path, self.abstract_state(bank, rows, seeds), layout(rows))

    # -- the chunk ------------------------------------------------------------------------------------------
    def _update(self, state, bank, rows):
        """One PPO update of one agent's state: (state, UpdateOut)."""
        return self.ppo.update(state, bank, rows)

    def _chunk_one(self, state, bank, rows, num_updates: int):
        state, acc, losses = updates_scanned(self._update, state, bank, rows, num_updates,
                                             len(self.achievement_names))
        ts = self.agent_state(state)
        return state, ChunkMetrics(rows=acc, losses=losses, env_steps=ts.env_steps, update_step=ts.update_step)

    def _train_chunk(self, ts, bank, rows, reset, num_updates: int):
        self.trace_counts["train_chunk"] += 1
        # A flag per agent (a fused study's methods start phases apart), in one real branch: no reset costs nothing.
        reset_where = functools.partial(_reset_where, self._reset_one)
        reset = jnp.broadcast_to(reset, jax.tree.leaves(ts)[0].shape[:1])  # one flag for all, or one per agent
        ts = jax.lax.cond(reset.any(), lambda s: self.over_seeds(reset_where, (0, None, rows_axis(rows), 0))(
            s, bank, rows, reset), lambda s: s, ts)
        fn = functools.partial(self._chunk_one, num_updates=num_updates)
        return self.over_seeds(fn, (0, None, rows_axis(rows)))(ts, bank, rows)

    def compile_train_chunk(self, ts, bank, rows, num_updates: int):
        """Ahead-of-time compile of train_chunk for these shapes: a callable (ts, bank, rows, reset=False) ->
        (ts, metrics). Use it to time compilation on its own; it shares nothing with the `train_chunk` cache."""
        compiled = lowered_chunk(self, ts, bank, rows, num_updates).compile()
        return lambda ts, bank, rows, reset=False: compiled(*_chunk_arguments(ts, bank, rows, reset))

    def precompile_chunk(self, ts, bank, rows, num_updates: int) -> None:
        """Start compiling train_chunk for these arguments' types in a background thread (`ts` is only read for
        its shapes); a later train_chunk call with the same types runs that program."""
        self.ahead.submit(self._chunk_jit, _chunk_arguments(ts, bank, rows), {"num_updates": num_updates})

    def train_chunk(self, ts, bank, rows, num_updates: int, reset=False) -> tuple[Any, ChunkMetrics]:
        """Run `num_updates` PPO updates for every seed. `ts` is donated (do not reuse it afterwards). `reset`: fresh
        episodes first, for every agent (a bool) or for the agents whose flag is set (bool[agents]).

        bank: a Bank (env params with leading K rows); rows: i32[N] or i32[S, N] (the bank row of each env slot; the
        VecEnv reads both on every step, so after moving slots to other rows start fresh episodes: `reset=True`,
        or `reset_envs` first). Env steps in the chunk per seed: num_updates * num_envs * num_steps."""
        if np.any(reset) and draws_rows(rows) != isinstance(self.agent_state(ts).env_state, SampledVecState):
            # Fixed rows <-> rows drawn per episode changes the env state's type: that reset is a program of its own.
            assert np.all(reset), "a change between fixed and drawn rows resets every agent: give reset=True"
            ts, reset = self.reset_envs(ts, bank, rows), False
        args = _chunk_arguments(ts, bank, rows, reset)
        compiled = self.ahead.get(args, {"num_updates": num_updates})
        return compiled(*args) if compiled is not None else self._chunk_jit(*args, num_updates=num_updates)


def updates_scanned(update, state, bank, rows, num_updates: int, num_achievements: int):
    """`num_updates` calls of `update` (state, bank, rows) -> (state, UpdateOut) in one scan: (state, the episodes'
    RowStats [K] summed, LossStats [num_updates])."""

    def body(carry, _):
        state, acc = carry
        state, out = update(state, bank, rows)
        return (state, acc + row_stats_from_steps(out.infos, bank.num_rows)), out.losses

    (state, acc), losses = jax.lax.scan(body, (state, RowStats.zeros(bank.num_rows, num_achievements)), None,
                                        length=num_updates)
    return state, acc, losses


def _reset_where(reset_one, state, bank, rows, flag):
    """One agent's state with fresh episodes (`reset_one`) if its flag is set, else as it was."""
    return jax.tree.map(lambda new, old: jnp.where(flag, new, old), reset_one(state, bank, rows), state)


def lowered_chunk(trainer: Trainer, ts, bank, rows, num_updates: int, platforms: tuple[str, ...] | None = None):
    """`trainer.train_chunk`'s program for these shapes, lowered for this backend or for `platforms` (e.g. ("cuda",),
    which needs no GPU); `ts` may be shapes only (`jax.eval_shape(trainer.init, bank, rows)`). To count or read what
    the program holds (benchmarks/step_loops.py)."""
    traced = trainer._chunk_jit.trace(*_chunk_arguments(ts, bank, rows), num_updates=num_updates)
    return traced.lower(lowering_platforms=platforms) if platforms else traced.lower()


def _chunk_arguments(ts, bank, rows, reset=False) -> tuple:
    """The traced arguments of `_train_chunk` (a compiled chunk is called with exactly these types); `reset`: one
    flag for every agent, or one per agent, given to the program as bool[agents]."""
    agents = jax.tree.leaves(ts)[0].shape[0]
    return ts, bank, layout(rows), np.broadcast_to(np.asarray(reset, np.bool_), (agents,)).copy()


def in_its_layout(fn, tree):
    """`fn(tree)` (a program that may donate `tree`) with its outputs put back in `tree`'s shardings. XLA picks the
    layout of a program's outputs itself, and over several devices it replicated a few leaves of an env reset's
    TrainState: the next chunk and evaluation handed them compiled again (plr's and sfl's, before 2026-11-28)."""
    if jax.device_count() == 1:
        return fn(tree)
    placed = jax.tree.map(lambda x: x.sharding, tree)  # read before the call donates `tree`
    return jax.device_put(fn(tree), placed)
