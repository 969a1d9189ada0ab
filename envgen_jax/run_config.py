"""The run configuration of `envgen-jax train`: one typed, frozen tree read from `configs/*.yaml`.

Every field below is a YAML key (`schedule.cycles`, `ppo.num_envs`, ...), overridable with `--set key.path=value`.
Step counts are per seed, in environment steps; each training phase is rounded up to whole compiled chunks
(`schedule.updates_per_chunk` PPO updates of `ppo.num_envs x ppo.num_steps` steps), and the report states the steps
actually taken.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from envgen_jax.config_io import apply_overrides, from_mapping, load_config_file, move_old_keys, renamed, to_mapping
from envgen_jax import games, methods
from envgen_jax.llm import settings as llm_settings
from envgen_jax.llm.settings import LLMSettings, read_llm
from envgen_jax.schema import ConfigError, Declared, bounded, declared_problems
from envgen_jax.trainer.config import HYPERPARAMS, ExecutionConfig, PPOAlgorithm, TrainerConfig
from envgen_jax.trainer.encoders import ENCODERS, NetworkConfig

METHODS = methods.METHODS
ENVS = games.NAMES


@dataclasses.dataclass(frozen=True)
class ScheduleConfig(Declared):
    """EnvGen's schedule (paper Table 1: 4 cycles, 0.96M pretraining steps, 1M scored steps)."""

    cycles: int = bounded(4, minimum=0)
    """EnvGen cycles N_cycle: each is (LLM step, training in LLM envs, training in the original env, evaluation)"""
    llm_env_steps: int = bounded(120_000, minimum=0)
    """steps per cycle in the LLM environments (T_LLM-Env; 4 x 0.12M + 4 x 0.12M = the paper's 0.96M)"""
    original_env_steps: int = bounded(120_000, minimum=0)
    """steps per cycle in the original environment (T_Orig-Env), after the LLM environments"""
    final_steps: int = bounded(1_000_000, minimum=0)
    """the scored phase: training in the original environment; its episodes alone make the score"""
    envs_per_call: int = bounded(4, minimum=1)
    """LLM environments asked for per LLM call (N_env; paper 4)"""
    llm_episode_length: int = bounded(1024, minimum=1)
    """episode length of LLM environments that do not set episode_settings.episode_length (paper: 1024)"""
    mixing: Literal["sequential", "mixed"] = "sequential"
    """'sequential': the paper's phases (LLM envs, then original); 'mixed': both at once in one chunk, with
    `original_share` of the env slots in the original game, for llm_env_steps + original_env_steps steps"""
    original_share: float = bounded(0.5, minimum=0, below=1)
    """share of env slots running the original game in 'mixed' mode"""
    feedback: Literal["pooled", "per_seed"] = "pooled"
    """'pooled': one designer sees success mean +/- std over seeds (4 calls in all); 'per_seed': a designer per seed"""
    updates_per_chunk: int = bounded(8, minimum=1)
    """PPO updates per compiled chunk: the host (progress, checkpoints) acts between chunks"""

    PATH, WHAT = "schedule.", "schedule"


@dataclasses.dataclass(frozen=True)
class EvalConfig(Declared):
    """Evaluation in the original environment after every cycle (the LLM's feedback) and at the end."""

    envs_per_agent: int = bounded(64, minimum=1)
    """evaluation environments per agent (the older `eval.num_envs`: `ppo.num_envs` is the training's)"""
    episodes_per_env: int = bounded(1, minimum=1)
    """episodes counted per evaluation environment"""
    max_steps: int = bounded(10_000, minimum=1)
    """step budget; episodes still running then are not counted (the count is reported)"""
    mode: Literal["sample", "greedy"] = "sample"
    """'sample' (the stochastic policy, as trained) or 'greedy'"""

    PATH, WHAT = "eval.", "eval"


@dataclasses.dataclass(frozen=True)
class OutputConfig(Declared):
    checkpoint_minutes: float = bounded(5.0, minimum=0)
    """also checkpoint between chunks when this many minutes passed since the last checkpoint (0: after every chunk)"""
    keep_checkpoints: int = bounded(2, minimum=1)
    """newest checkpoints kept on disk"""
    tensorboard: bool = True
    """write TensorBoard event files under tb/"""
    pictures: bool = True
    """draw each cycle's environments (worlds/cycle_K.png)"""
    progress: bool = True
    """progress bar on the terminal"""
    compile_cache: bool = True
    """`envgen-jax train` and `study`: keep compiled programs in JAX's persistent cache,
    $XDG_CACHE_HOME/envgen_jax/xla (default ~/.cache/envgen_jax/xla), so a run with the same shapes compiles nothing;
    ENVGEN_JAX_COMPILE_CACHE=0 turns it off too, and an explicit JAX_COMPILATION_CACHE_DIR wins (docs/devices.md)"""

    PATH, WHAT = "output.", "output"


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """PPO settings that change no shape, each given as a list of values: the run trains every combination (the
    grid) x `seeds` agents, vmapped in one compiled program (the values are traced, so nothing recompiles), and the
    report gives each combination's mean +/- std over its seeds. A setting left empty keeps its `ppo.` value.

        sweep: {lr: [1.0e-4, 3.0e-4, 1.0e-3]}      # with seeds: 4 -> 12 agents in one program
    """

    lr: tuple[float, ...] = ()
    gamma: tuple[float, ...] = ()
    gae_lambda: tuple[float, ...] = ()
    clip_eps: tuple[float, ...] = ()
    ent_coef: tuple[float, ...] = ()
    vf_coef: tuple[float, ...] = ()

    @property
    def active(self) -> bool:
        """Whether any setting is swept."""
        return any(getattr(self, name) for name in HYPERPARAMS)

    def points(self) -> list[dict[str, float]]:
        """Every combination of the listed values, in field order ([{}] without a sweep)."""
        swept = {name: values for name in HYPERPARAMS if (values := getattr(self, name))}
        return [dict(zip(swept, combo)) for combo in itertools.product(*swept.values())]


@dataclasses.dataclass(frozen=True)
class RunConfig:
    env: str = "crafter"
    """the game: crafter | heist"""
    method: str = "envgen"
    """envgen | ppo | fixed | easy_to_hard | adversarial | random | plr | sfl | envgen_sfl | scripted (see
    docs/methods.md)"""
    seeds: int = bounded(1, minimum=1)
    """independent agents, vmapped in one compiled run; the report gives mean +/- std over them"""
    seed: int = 0
    """first seed (seeds are seed .. seed + seeds - 1)"""
    observation: Literal["symbolic", "pixels"] = "symbolic"
    """agent observation: symbolic | pixels"""
    game_options: games.GameOptions = dataclasses.field(
        default=None, metadata={"read": lambda run, *args: games.read_run_options(run, *args, RunConfig.env)})
    """the game's own settings, declared by its package (Heist: `mode`, Procgen's distribution mode, easy (9x9 world)
    or hard (13x13, Procgen's default): `game_options: {mode: easy}`; Crafter has none)"""
    ppo: PPOAlgorithm = PPOAlgorithm()
    """the PPO algorithm's sizes, switches and hyperparameters"""
    network: NetworkConfig = NetworkConfig()
    """the agent's network: `kind` (mlp | map | trunk | grid | drawn | conv) and each kind's settings (`network: {kind: conv, conv:
    {channels: [64, 128, 128]}}`); older configurations' `ppo.width`, `ppo.network`, ... are read into it"""
    execution: ExecutionConfig = ExecutionConfig()
    """how the agents run: `seed_axis` (training, evaluation and init), `conv_as_matmul`, `compute_dtype`,
    `resets_per_step`; the seeds are the top-level `seeds` and `seed`"""
    schedule: ScheduleConfig = ScheduleConfig()
    eval: EvalConfig = EvalConfig()
    llm: LLMSettings = dataclasses.field(default=LLMSettings(), metadata={"read": read_llm})
    """the designer: `transport` (how to reach the model) and `strategy` (how to ask it); flat keys still read"""
    output: OutputConfig = OutputConfig()
    method_options: methods.MethodOptions = dataclasses.field(default_factory=lambda: methods.MethodOptions())
    """each method's own settings, declared by the method (`Method.OPTIONS`): `method_options: {sfl: {pool: 64}}`;
    older configurations' `ued:` section is read into it (`methods.upgrade_run_settings`)"""
    sweep: SweepConfig = SweepConfig()

    def __post_init__(self):
        problems = declared_problems(self, "")
        for point in self.sweep.points():  # each combination must be a valid PPO setting (ppo's own checks)
            try:
                dataclasses.replace(self.ppo, **point)
            except ConfigError as e:
                problems += [p.replace('ppo.', 'sweep.', 1) for p in e.problems]
        if self.env not in ENVS:
            problems.append(f"env: {self.env!r} is not one of {', '.join(ENVS)}")
        else:  # the game's options (None: its defaults), also when built in code
            object.__setattr__(self, "game_options", games.get(self.env).read_options(self.game_options,
                                                                                       problems=problems))
        if self.method not in METHODS:
            problems.append(f"method: {self.method!r} is not one of {', '.join(METHODS)}")
        problems += self.agent_problems()
        if self.method in METHODS:
            problems += methods.get(self.method).config_problems(self)
        if problems:
            raise ConfigError(problems, what="run configuration")

    def agent_problems(self) -> list[str]:
        """The network against the observation it reads, and the sections against each other (TrainerConfig's checks)."""
        readers = [kind for kind, settings in ENCODERS.items() if self.observation in settings.OBSERVATIONS]
        problems = []
        if self.network.kind not in readers:
            problems.append(f"network.kind: {self.network.kind!r} cannot read the {self.observation!r} observation "
                            f"(observation: {self.observation} needs network.kind {' or '.join(map(repr, readers))})")
        try:
            TrainerConfig(self.ppo, self.network, self.execution)
        except ConfigError as e:
            problems += e.problems
        return problems

    @classmethod
    def upgrade_mapping(cls, data: Mapping, problems: list[str]) -> dict:
        """A run configuration mapping with older versions' keys where they live today (OLD_KEYS;
        `config_io.from_mapping` calls it)."""
        return move_old_keys(data, OLD_KEYS, (), problems)[0]

    @property
    def trainer_ppo(self) -> TrainerConfig:
        return TrainerConfig(self.ppo, self.network, self.execution, num_agents=self.num_agents, seed=self.seed)

    @property
    def num_agents(self) -> int:
        """Agents trained side by side: `seeds` for each combination of the sweep (just `seeds` without one)."""
        return len(self.sweep.points()) * self.seeds

    @property
    def agent_seeds(self) -> list[int]:
        """Each agent's seed: seed .. seed + seeds - 1, repeated for each sweep combination."""
        return [self.seed + i for _ in self.sweep.points() for i in range(self.seeds)]

    @property
    def agent_hparams(self) -> dict[str, list[float]]:
        """Each agent's swept PPO settings (name -> one value per agent; empty without a sweep)."""
        points = self.sweep.points()
        return {name: [p[name] for p in points for _ in range(self.seeds)] for name in points[0]}

    @property
    def agent_labels(self) -> list[str]:
        """'lr 0.0001, seed 0' for each agent (just 'seed 0' without a sweep)."""
        return [", ".join([*(f"{k} {v:g}" for k, v in p.items()), f"seed {self.seed + i}"])
                for p in self.sweep.points() for i in range(self.seeds)]

    @property
    def uses_llm(self) -> bool:
        return methods.uses_llm(self.method)

    @property
    def steps_per_update(self) -> int:
        return self.ppo.steps_per_update

    @property
    def num_designers(self) -> int:
        """LLM designers: one per agent (seed) with `schedule.feedback: per_seed`, else one for all agents."""
        return self.num_agents if self.schedule.feedback == "per_seed" else 1

    @property
    def bank_rows(self) -> int:
        """Rows of the environment bank: row 0 the original game, then every designer's LLM configurations (a
        method may size it otherwise: `Method.bank_rows`)."""
        return methods.get(self.method).bank_rows(self)

    def cycle_updates(self) -> int:
        """PPO updates of one cycle's pretraining, whatever the method: its two phases (llm_env_steps, then
        original_env_steps) each rounded up to whole chunks, so a method that trains them as one phase (or
        `mixing: mixed`) takes exactly as many steps as one that trains them apart."""
        s = self.schedule
        return self.updates_for(s.llm_env_steps) + self.updates_for(s.original_env_steps)

    def updates_for(self, steps: int) -> int:
        """PPO updates for `steps` env steps, rounded up to whole chunks (0 steps -> 0 updates)."""
        chunk = self.schedule.updates_per_chunk
        return math.ceil(steps / (self.steps_per_update * chunk)) * chunk if steps > 0 else 0

    def to_dict(self) -> dict:
        out = to_mapping(self)
        out["llm"] = self.llm.to_dict()  # never writes the API key
        return out


def load_run_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> RunConfig:
    """Read a YAML run configuration (with its `extends:` chain) and apply `--set` overrides; older versions' keys
    are moved to today's (OLD_KEYS, a --set winning); every problem is reported at once, named by the key written."""
    data = load_config_file(path) if path else {}
    problems: list[str] = []
    data, moved = move_old_keys(apply_overrides(data, overrides, problems), OLD_KEYS, overrides, problems)
    config = from_mapping(RunConfig, data, problems=problems)
    if problems:  # a wrong --set string is reported with the settings' problems
        raise ConfigError(renamed(problems, moved), what="run configuration")
    return config


# -- older versions' keys: one table (config_io.move_old_keys) ------------------------------------------------------
# The flat keys of the trainer config before it had sections (run configurations, saved runs and studies still
# hold them under `ppo:`):
# each names its place today. None: the chosen kind's own setting (`width` was each MLP's width for mlp and map,
# the bottleneck for conv); a kind without it ignored it (conv had no depth), and so does the move.
LEGACY_KEYS: dict[str, tuple[str, ...] | None] = {
    "network": ("network", "kind"), "recurrent": ("network", "recurrent"),
    "memory_size": ("network", "memory_size"), "width": None, "depth": None, "activation": None, "layer_norm": None,
    "map_channels": ("network", "map", "channels"), "map_res_blocks": ("network", "map", "res_blocks"),
    "conv_channels": ("network", "conv", "channels"), "conv_norm": ("network", "conv", "norm"),
    "head_width": ("network", "conv", "head_width"), "num_seeds": ("num_seeds",), "seed": ("seed",),
    **{f.name: ("execution", f.name) for f in dataclasses.fields(ExecutionConfig)},
}


def legacy_path(key: str, kind: str) -> tuple[str, ...] | None:
    """Where the flat key `key` of an older trainer config lives today, the network's kind being `kind` (None: nowhere;
    that kind never read it)."""
    path = LEGACY_KEYS[key]
    if path is None:
        settings = ENCODERS.get(kind)
        return ("network", kind, key) if settings and key in {f.name for f in dataclasses.fields(settings)} else None
    return path


def _ppo_key(data: dict, key: str, value: Any, problems: list[str]):
    """A flat key of the trainer config before its sections (`ppo.width`, `ppo.network`, `ppo.seed_axis`): to its
    section (`LEGACY_KEYS`), `width` and the like to the chosen kind's settings."""
    if key not in LEGACY_KEYS:
        return None  # today's ppo: setting
    network = data.get("network")
    kind = network.get("kind", "mlp") if isinstance(network, Mapping) else "mlp"
    path = legacy_path(key, kind if kind in ENCODERS else "mlp")
    if path in (("num_seeds",), ("seed",)):
        return _seeds_key(data, key, value, problems, "ppo")
    return [] if path is None else [".".join(path)]


def _seeds_key(data: dict, key: str, value: Any, problems: list[str], section: str = "execution"):
    """`num_seeds` and `seed` in `ppo:` or `execution:`, which older versions wrote at their defaults and refused
    at any other value: a run's seeds are its top-level `seeds` and `seed`."""
    if value != {"num_seeds": 1, "seed": 0}[key]:
        problems.append(f"{section}.{key}: set the top-level `{'seeds' if key == 'num_seeds' else 'seed'}` instead")
    return []


def _dense_seeds(data: dict, key: str, value: Any, problems: list[str]):
    """`seed_axis: dense` of older versions: the seeds vmapped, each convolution as a matrix product."""
    return {"execution.seed_axis": "vmap", "execution.conv_as_matmul": True} if value == "dense" else None


def _ued_key(data: dict, key: str, value: Any, problems: list[str]):
    """A key of the `ued:` section, before methods declared their settings: to each method whose options name it
    (`OPTIONS.LEGACY`: `ued.mastered_at` to sfl, envgen_sfl and scripted), so no value given is dropped."""
    legacy = {name: getattr(cls.OPTIONS, "LEGACY", {}) for name, cls in methods.REGISTRY.items()}
    paths = [f"method_options.{name}.{keys[key]}" for name, keys in legacy.items() if key in keys]
    if not paths:
        problems.append(f"ued.{key}: unknown setting; allowed: {', '.join(dict.fromkeys(k for v in legacy.values() for k in v))}")
    return paths


def _heist_mode(data: dict, key: str, value: Any, problems: list[str]):
    """`heist_mode`, a run field before games declared options: Heist's `game_options.mode` (other games ignore
    it, as they did; its value is checked either way)."""
    found: list[str] = []
    games.get("heist").read_options({"mode": value}, "game_options", found)
    problems += [p.replace("game_options.mode", key, 1) for p in found]
    return ["game_options.mode"] if not found and data.get("env") == "heist" else []


OLD_KEYS = {  # old path -> new path, or the rule that finds it; in this order (the kind before `ppo.width`)
    "heist_mode": _heist_mode,
    "eval.num_envs": "eval.envs_per_agent",  # one name for one thing: `ppo.num_envs` is the training's
    "ued.*": _ued_key,
    "llm.*": llm_settings.flat_key,
    "ppo.network": "network.kind",
    "ppo.*": _ppo_key,
    "execution.seed_axis": _dense_seeds,
    "execution.num_seeds": _seeds_key,
    "execution.seed": _seeds_key,
}
