"""What a game is: the `Game` base class each game's package subclasses (its `game` module holds the instance,
`GAME`), and `GameOptions`, the base of a game's own run settings. The registry of games is `envgen_jax.games`.

Kept apart from the registry so that a game's package imports this module and the registry imports the game's
package (lazily, by name) without either importing the other: no import cycle, even at run time.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from envgen_jax.schema import ConfigError, Declared

if TYPE_CHECKING:  # jax and the LLM package stay out of import time
    import numpy as np

    from envgen_jax.envs.bank import Bank
    from envgen_jax.llm.spec import EnvSpec
    from envgen_jax.llm.targeting import TargetMap


class ConfigurableEnv(Protocol):
    """A single environment whose per-env parameters come from a bank of configurations (vmapped by VecEnv)."""

    achievement_names: Sequence[str]

    def make_params(self, configs: Sequence[Any], capacity: int | None = None) -> Bank: ...
    def reset(self, key, params): ...
    def step(self, key, state, action, params): ...


@dataclasses.dataclass(frozen=True)
class GameOptions(Declared):
    """A game's own run settings (`game_options:` in a run configuration). A game with options declares a frozen
    subclass whose fields are the options, declared like the run configuration's (a `Literal[...]` field names its
    allowed values, `schema.bounded` a range) and checked when made; a game without any uses this class itself."""

    PATH, WHAT = "game_options.", "game options"


class Game:
    """What the run, the designer, the report and the command line know about one game. A game's package subclasses
    it (its `game` module holds the instance, `GAME`)."""

    name: str                                # the registry key
    title: str                               # the game's name inside prompts, e.g. "Crafter"
    config_cls: type                         # its SchemaConfig dataclass (designer JSON <-> per-env parameters)
    achievements: tuple[str, ...]            # what success rates are reported under, in the prompts' order
    skills: str = "achievements"             # what the prompts call them ("subtasks" for Heist)
    prompts_dir: Path                        # generate.txt, feedback.txt, rules.txt, needs.txt (llm/spec.py)
    targeting: TargetMap | None = None       # which settings help which achievement (llm/targeting.py)
    options_cls: type = GameOptions          # its own run settings (`game_options`)
    score_name: str = "score"                # "Crafter score" or "score"
    score_definition: str = ""
    score_is_crafter: bool = False           # the paper's Crafter score (report's crafter_score, Table 1)
    max_return: float | None = None          # the most an episode can earn: reports give return_pct (Craftax: 226)
    # What study.md follows skill by skill (success in the scored phase, first unlock): Crafter's long chain (the
    # paper's figure), Craftax's deep skills; and published mean returns (% of max_return) to set beside a study's.
    chain: tuple[str, ...] = ()
    chain_name: str = "The long chain"
    published_return_pct: tuple[tuple[str, float], ...] = ()

    def make_env(self, observation: str = "symbolic", options: GameOptions | None = None) -> ConfigurableEnv:
        """The single-environment object (vmapped by `envs.vector.VecEnv`)."""
        raise NotImplementedError

    def score(self, rates) -> np.ndarray:
        """Success rates [S, A] -> the game's score [S]."""
        raise NotImplementedError

    def achievement_rewards(self) -> dict[str, float] | None:
        """What unlocking each achievement adds to an episode's return, when the return is their sum plus a health
        term (Craftax); None when it is not. study.md splits differences in mean return by it."""
        return None

    @property
    def score_key(self) -> str:
        """The name of its score in evaluation records (`crafter_score_mean`, ...): the paper's for Crafter."""
        return "crafter_score" if self.score_is_crafter else "score"

    def render(self, configs: Sequence[Any], path, seed: int = 0, options: GameOptions | None = None) -> Path:
        """Draw level `seed` of each configuration into one PNG at `path`; returns the path written."""
        raise NotImplementedError

    def option_problems(self, configs: Sequence[Any], options: GameOptions | None = None) -> list[str]:
        """Problems with running `configs` under these options (e.g. Heist's mazes too big for the mode's world)."""
        return []

    def designer_check(self, env) -> Any:
        """Extra checks of a design for this environment object, (config, where) -> problems, or None."""
        return None

    def designer_spec(self, env=None) -> EnvSpec:
        """The designer's view of this game; for `env`, with `designer_check(env)` (Heist's mazes must fit its
        world)."""
        from envgen_jax.llm.spec import EnvSpec
        return EnvSpec(name=self.name, title=self.title, config_cls=self.config_cls,
                       achievements=tuple(self.achievements), skills=self.skills, prompts_dir=Path(self.prompts_dir),
                       check=None if env is None else self.designer_check(env), targeting=self.targeting)

    def read_options(self, data: Any = None, where: str = "game_options", problems: list[str] | None = None):
        """This game's options from a mapping (None: the defaults; an options object of this game: itself), every
        key and value checked, problems named by path (`where`.option). Problems raise one ConfigError; with
        `problems` given they are appended to it instead, and None is returned."""
        return parse_options(self.options_cls, self.name, data, where, problems)


def parse_options(cls: type, game: str, data: Any, where: str = "game_options",
                  problems: list[str] | None = None):
    """Options of class `cls` (a GameOptions) of game `game` (for messages), as `Game.read_options` reads them."""
    from envgen_jax.config_io import from_mapping, to_mapping

    if type(data) is cls:
        return data
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = to_mapping(data)  # another game's options (or the bare class): read again as this game's
    own = problems is None
    problems = [] if own else problems
    if isinstance(data, Mapping) and data and not dataclasses.fields(cls):
        problems += [f"{where}.{key}: unknown setting; {game} has no game options" for key in data]
        options = None
    else:
        options = from_mapping(cls, data, where, problems)
    if own and problems:
        raise ConfigError(problems, what=f"{game} options")
    return options
