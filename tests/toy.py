"""The toy game of the tests (tests/test_games.py walks through it as docs/adding-a-game.md does): a whole game as a
package outside envgen_jax, written to a folder by `write_toy_package`, and `CHILD`, the CLI in a child process with
it registered. Tests of machinery that does not depend on the game run on it (conftest's `toy` and `toy_module`): its
programs compile in seconds, where Crafter's take a minute."""

from pathlib import Path

# A whole game as a package outside envgen_jax: its configuration, targeting map, options, prompts, environment (in
# JAX: make_params / reset / step, as envs/heist/env.py), renderer and Game. A corridor of 8 cells: the agent starts
# at the left end and moves left, right or jumps two cells right; coins lie on some cells, and lava (if the room has
# it) on the middle one burns an agent that steps on it. Reaching the right end ends the episode.
TOY_GAME = '''
import dataclasses
from pathlib import Path
from typing import ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from PIL import Image

from envgen_jax.envs.bank import Bank
from envgen_jax.envs.game import Game, GameOptions
from envgen_jax.llm.targeting import Concept, TargetMap, less, more
from envgen_jax.schema import SchemaConfig, setting

LENGTH = 8


@dataclasses.dataclass(frozen=True)
class ToyConfig(SchemaConfig):
    ENV_NAME: ClassVar[str] = "toy"

    coins: int = setting("world_settings", 1, "Coins on the floor.", minimum=0, maximum=5)
    lava: bool = setting("world_settings", True, "Whether a river of lava crosses the room.")


@dataclasses.dataclass(frozen=True)
class ToyOptions(GameOptions):
    size: Literal["small", "large"] = "small"
    """the room's size"""


@struct.dataclass
class ToyParams:  # one configuration as traced values
    coins: jax.Array
    lava: jax.Array
    max_steps: jax.Array


@struct.dataclass
class ToyState:
    pos: jax.Array
    coins: jax.Array         # bool[LENGTH]
    time: jax.Array
    achievements: jax.Array  # bool[2], this episode's
    world: jax.Array         # i32 drawn at reset, as a generated map is: two resets make two worlds that differ


@dataclasses.dataclass(frozen=True)  # a value: equal envs share one trainer and its programs in a process
class ToyEnv:
    achievement_names = ("collect_coin", "cross_room")
    num_actions = 3  # left, right, jump
    obs_shape = (2 * LENGTH + 1,)

    def make_params(self, configs, capacity=None):
        # numpy on the host, as a game's banks are made: nothing compiled outside the run's programs
        return Bank.from_configs(configs, lambda c: ToyParams(np.int32(c.coins), np.bool_(c.lava), np.int32(24)),
                                 capacity)

    def observe(self, state, params):
        here = jax.nn.one_hot(state.pos, LENGTH)
        return jnp.concatenate([here, state.coins.astype(jnp.float32), params.lava.astype(jnp.float32)[None]])

    def reset(self, key, params):
        coins_key, world_key = jax.random.split(key)
        order = jax.random.permutation(coins_key, LENGTH - 1) + 1  # coins anywhere but the start
        coins = jnp.zeros(LENGTH, bool).at[order].set(jnp.arange(LENGTH - 1) < params.coins)
        world = jax.random.randint(world_key, (), 0, jnp.iinfo(jnp.int32).max)
        state = ToyState(jnp.int32(0), coins, jnp.int32(0), jnp.zeros(2, bool), world)
        return self.observe(state, params), state

    def step(self, key, state, action, params):
        pos = jnp.clip(state.pos + jnp.array([-1, 1, 2])[action], 0, LENGTH - 1)
        burnt = params.lava & (pos == LENGTH // 2)
        crossed = pos == LENGTH - 1
        unlocked = state.achievements | jnp.stack([state.coins[pos], crossed])
        time = state.time + 1
        timeout = time >= params.max_steps
        reward = (unlocked & ~state.achievements).sum().astype(jnp.float32)
        state = state.replace(pos=pos, coins=state.coins.at[pos].set(False), time=time, achievements=unlocked)
        info = {"truncated": timeout & ~crossed & ~burnt, "achievements": unlocked}
        return self.observe(state, params), state, reward, crossed | burnt | timeout, info


class Toy(Game):
    name = "toy"
    title = "Toy"
    config_cls = ToyConfig
    achievements = ToyEnv.achievement_names
    prompts_dir = Path(__file__).parent / "prompts"
    targeting = TargetMap("toy", {"collect_coin": (more("world_settings.coins"),),
                                  "cross_room": (less("world_settings.lava"),)},
                          {"cross_room": ("collect_coin",)},
                          (Concept(("coin",), (more("world_settings.coins"),), skills=("collect_coin",)),))
    options_cls = ToyOptions

    def make_env(self, observation="symbolic", options=None):
        return ToyEnv()

    def score(self, rates):
        return rates.mean(-1)

    def render(self, configs, path, seed=0, options=None):
        """One row of cells per configuration: lava red, the rest grey."""
        image = Image.new("RGB", (LENGTH * 8, len(configs) * 8), "grey")
        for row, config in enumerate(configs):
            if config.lava:
                image.paste((200, 40, 0), (LENGTH // 2 * 8, row * 8, LENGTH // 2 * 8 + 8, row * 8 + 8))
        image.save(path)
        return Path(path)


GAME = Toy()
'''
TOY_PROMPTS = {
    "generate": "Design ${num_envs} rooms of ${title}.\nSkills:\n${achievements}\nSettings:\n${settings}\n"
                "Rules:\n${rules}\n${output_format}\n",
    "feedback": "Success:\n${success}\nBefore:\n${previous_configs}\nDesign ${num_envs} more.\n${output_format}\n",
    "rules": "Lava burns; coins lie anywhere.\n",
    "needs": "collect_coin: a coin in the room\ncross_room: a way past the lava\n",
}


def write_toy_package(folder: Path) -> Path:
    """The toy game's package (its game module and prompts) written into `folder`; returns the package's path."""
    package = folder / "toy_game"
    (package / "prompts").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "game.py").write_text(TOY_GAME)
    for kind, text in TOY_PROMPTS.items():
        (package / "prompts" / f"{kind}.txt").write_text(text)
    return package


# The CLI in a child process, with the toy game registered (its package is written to the folder in argv[1]).
CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from envgen_jax import games
games.GAMES["toy"] = "toy_game.game"
from envgen_jax.cli import main
sys.exit(main(sys.argv[2:]))
"""
