"""What an environment designer (an LLM or a person) may set in Heist, and what each value means.

Heist (Procgen) is a maze with a strict chain of up to three coloured keys and locked doors in front of a gem:
key blue -> door blue -> key green -> door green -> key red -> door red -> gem (+10, ends the episode).

Every setting is optional. `HeistConfig.original()` leaves every setting at its default, which is Procgen's own
distribution for the mode of the environment that runs it: `HeistEnv(mode="hard")` (Procgen's default, a 13x13
world) gives Procgen hard and `HeistEnv(mode="easy")` (9x9) gives Procgen easy. The world size is static (it sets
array shapes) and belongs to the environment, not to a config; a config is checked against it by
`HeistConfig.fit_problems(world_dim)` and by `make_params`.

`-1` on `maze_dim` and `num_keys` means "drawn as Procgen draws it". Procgen draws a difficulty d uniformly from
0..(world_dim-5)/2, then maze_dim = 2d + 5 and num_keys = min(3, d + (0 or 1)). With one of the two set by the
designer, the other is still drawn as Procgen would given it.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, ClassVar, Mapping

from envgen_jax.schema import ConfigError, SchemaConfig, setting

MAZE = "maze_settings"
PLACE = "placement_settings"
START = "start_settings"
EPISODE = "episode_settings"

KEY_COLOURS = ("blue", "green", "red")
MAZE_DIMS = (5, 7, 9, 11, 13)
DISTANCES = ("any", "near", "far")  # index = the traced code in HeistParams
WORLD_DIMS = {"easy": 9, "hard": 13}  # Procgen's world sizes per distribution mode (memory mode is not modelled)
RANDOM = -1

_distance_doc = ("Path distance counted from the agent's start through the maze (doors count as open). "
                 "any = uniform over the region (Procgen); near = within 2 cells of the closest possible cell, "
                 "far = within 2 cells of the farthest.")


def _start_key_doc(colour: str, index: int) -> str:
    return (f"The agent starts holding the {colour} key, so the {colour} door opens on touch and the {colour} key "
            f"is not placed in the maze. Only when the level has a {colour} door (num_keys >= {index + 1}).")


@dataclasses.dataclass(frozen=True)
class HeistConfig(SchemaConfig):
    ENV_NAME: ClassVar[str] = "heist"

    maze_dim: int = setting(
        MAZE, RANDOM, minimum=RANDOM, maximum=max(MAZE_DIMS), suggested=(RANDOM, *MAZE_DIMS),
        doc="Side of the square maze in cells: 5, 7, 9, 11 or 13, at most the world size (9 in easy mode, 13 in "
            "hard). Bigger mazes have longer paths and more dead ends. -1 = drawn as in Procgen (uniform over the "
            "sizes that fit).")
    num_keys: int = setting(
        MAZE, RANDOM, minimum=RANDOM, maximum=len(KEY_COLOURS),
        doc="Number of coloured key-and-door pairs (0-3), in the fixed order blue, green, red; each key lies before "
            "its door and the gem behind the last door. Doors sit at maze forks, so a small maze with too few forks "
            "gets fewer (as in Procgen). -1 = drawn as in Procgen: min(3, difficulty + 0 or 1) where difficulty = "
            "(maze_dim - 5) / 2.")

    key_distance: str = setting(PLACE, "any", choices=DISTANCES,
                                doc="Where each key lies in the part of the maze opened by the previous door (or "
                                    "around the start for the blue key). " + _distance_doc)
    gem_distance: str = setting(PLACE, "any", choices=DISTANCES,
                                doc="Where the gem lies behind the last door (anywhere in the maze but the start "
                                    "cell when there are no doors). " + _distance_doc)

    start_with_blue_key: bool = setting(START, False, _start_key_doc("blue", 0))
    start_with_green_key: bool = setting(START, False, _start_key_doc("green", 1))
    start_with_red_key: bool = setting(START, False, _start_key_doc("red", 2))

    max_episode_steps: int = setting(
        EPISODE, 1000, minimum=50, maximum=1000, suggested=(100, 200, 300, 500, 1000),
        doc="Steps before the episode is cut off with reward 0 (Procgen: 1000).")

    def __post_init__(self):
        problems = self.problems()
        if problems:
            raise ConfigError(problems, what=f"{self.ENV_NAME} configuration")

    def problems(self, where: str = "") -> list[str]:
        """Cross-field rules; `from_dict` reports them with the per-field problems and direct construction raises."""
        return _cross_field_problems(dataclasses.asdict(self), f"{where}." if where else "")

    def fit_problems(self, world_dim: int, where: str = "") -> list[str]:
        """Problems with running this config in a world of side `world_dim` (static on the env)."""
        prefix = f"{where}." if where else ""
        if self.maze_dim != RANDOM and self.maze_dim > world_dim:
            mode = {v: k for k, v in WORLD_DIMS.items()}.get(world_dim)
            named = f" ({mode} mode)" if mode else ""
            return [f"{prefix}{MAZE}.maze_dim: {self.maze_dim} does not fit the world of {world_dim}x{world_dim}"
                    f"{named}; use at most {world_dim}"]
        return []

    @classmethod
    def collect_problems(cls, data: Any, where: str = "") -> list[str]:
        """Per-field problems, then the cross-field rules over the fields that passed (others at their defaults)."""
        problems = super().collect_problems(data, where)
        if not isinstance(data, Mapping):
            return problems
        by_path = {s.path: s for s in cls.schema()}
        values = {f.name: f.default for f in dataclasses.fields(cls)}
        for section, body in data.items():
            for name, value in body.items() if isinstance(body, Mapping) else ():
                setting_ = by_path.get(f"{section}.{name}")
                checked, problem = setting_.check(value) if setting_ else (None, "unknown")
                if problem is None:
                    values[name] = checked
        return problems + _cross_field_problems(values, f"{where}." if where else "")

    @classmethod
    def json_schema(cls, changes_only: bool = False) -> dict:
        """One alternative per key count, so that constrained decoding cannot start the agent with a key the level
        lacks: the 1.5B model wrote num_keys 2 with start_with_red_key and kept it through two repairs that named
        the rule. With num_keys 0-2 written, only the starting keys of that level remain; left out, -1 or 3 allow
        all three. The validator (collect_problems) still checks replies from servers that ignore the schema."""
        whole = super().json_schema(changes_only)
        alternatives = [_with_key_count(whole, None)]
        alternatives += [_with_key_count(whole, count) for count in range(len(KEY_COLOURS))]
        return {"anyOf": alternatives}

    @classmethod
    def from_dict(cls, data: Any, where: str = "", world_dim: int | None = None) -> "HeistConfig":
        """Validate designer JSON; with `world_dim`, also check that the maze fits that world."""
        config = super().from_dict(data, where)
        if world_dim is not None:
            problems = config.fit_problems(world_dim, where)
            if problems:
                raise ConfigError(problems, what=f"{cls.ENV_NAME} configuration")
        return config

    @property
    def start_keys(self) -> tuple[bool, bool, bool]:
        return tuple(getattr(self, f"start_with_{colour}_key") for colour in KEY_COLOURS)


def _cross_field_problems(values: dict, prefix: str) -> list[str]:
    out = []
    maze_dim, num_keys = values["maze_dim"], values["num_keys"]
    if maze_dim != RANDOM and maze_dim not in MAZE_DIMS:
        out.append(f"{prefix}{MAZE}.maze_dim: {maze_dim} is not allowed; expected -1 (Procgen's draw) "
                   f"or one of {', '.join(map(str, MAZE_DIMS))}")
    for index, colour in enumerate(KEY_COLOURS):
        if values[f"start_with_{colour}_key"] and num_keys != RANDOM and index >= num_keys:
            out.append(f"{prefix}{START}.start_with_{colour}_key: the level has no {colour} key with "
                       f"{MAZE}.num_keys={num_keys}; keys come in the order {', '.join(KEY_COLOURS)}, so set "
                       f"{MAZE}.num_keys to {index + 1} or more, or leave start_with_{colour}_key out")
    return out


def _with_key_count(schema: dict, count: int | None) -> dict:
    """`schema` (SchemaConfig.json_schema) restricted to levels with `count` keys (None: left out, -1 or 3)."""
    out = copy.deepcopy(schema)
    maze, start = out["properties"][MAZE], out["properties"][START]
    num_keys = maze["properties"]["num_keys"]
    if count is None:
        num_keys["enum"] = [v for v in num_keys["enum"] if v in (RANDOM, len(KEY_COLOURS))]
        return out
    num_keys["enum"] = [count]
    maze["required"] = ["num_keys"]
    out["required"] = [MAZE]
    for colour in KEY_COLOURS[count:]:
        del start["properties"][f"start_with_{colour}_key"]
    return out
