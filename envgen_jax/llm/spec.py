"""What the designer needs to know about one environment: its config class, its achievements and its prompt files.

The machinery (prompts, client, validation, replay) is generic; an environment plugs in with an `EnvSpec` and four
text files under `prompts/`: `<name>_generate.txt`, `<name>_feedback.txt`, `<name>_rules.txt` and `<name>_needs.txt`
(one "achievement: what it needs" line per achievement).
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path
from typing import Any, Callable

from envgen_jax.llm.errors import LLMError

PROMPTS_DIR = Path(__file__).parent / "prompts"

# The 22 Crafter achievements, alphabetical as EnvGen's prompt lists them.
CRAFTER_ACHIEVEMENTS = (
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling", "collect_stone",
    "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe",
    "make_iron_sword", "make_stone_pickaxe", "make_stone_sword", "make_wood_pickaxe", "make_wood_sword",
    "place_furnace", "place_plant", "place_stone", "place_table", "wake_up",
)


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """One environment as the designer sees it."""

    name: str                          # also the prefix of its prompt files
    title: str                         # the game's name inside prompts, e.g. "Crafter"
    config_cls: type                   # a SchemaConfig dataclass: validator, JSON schema and settings text
    achievements: tuple[str, ...]      # the names success rates are reported under (achievements or subtasks)
    skills: str = "achievements"       # what the prompts call them ("subtasks" for Heist)
    prompts_dir: Path = PROMPTS_DIR
    # Extra run-specific checks on a validated config, (config, where) -> problems, sent back for repair like any
    # other problem; e.g. Heist's maze size against the world size of the mode being trained.
    check: Callable[[Any, str], list[str]] | None = None

    def template_path(self, kind: str) -> Path:
        return self.prompts_dir / f"{self.name}_{kind}.txt"

    def needs(self) -> dict[str, str]:
        """achievement -> what it needs, from `<name>_needs.txt` (one "name: text" line each; every achievement)."""
        path = self.template_path("needs")
        lines = [line for line in self.read_template("needs").splitlines() if line.strip()]
        out = {}
        for line in lines:
            name, sep, text = line.partition(":")
            if not sep or name.strip() not in self.achievements:
                raise LLMError(f"{path}: {line!r} is not 'achievement: what it needs' for one of "
                               f"{', '.join(self.achievements)}")
            out[name.strip()] = text.strip()
        missing = [a for a in self.achievements if a not in out]
        if missing:
            raise LLMError(f"{path}: no line for {', '.join(missing)}")
        return out

    def read_template(self, kind: str) -> str:
        path = self.template_path(kind)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise LLMError(f"prompt template {path} is missing; every environment needs {self.name}_generate.txt, "
                           f"{self.name}_feedback.txt, {self.name}_rules.txt and {self.name}_needs.txt in "
                           f"{self.prompts_dir}") from None


def _crafter() -> EnvSpec:
    # Imported late: the crafter package pulls in JAX, which prompt-only callers do not need before the first call.
    from envgen_jax.envs.crafter.config import CrafterConfig

    return EnvSpec(name="crafter", title="Crafter", config_cls=CrafterConfig, achievements=CRAFTER_ACHIEVEMENTS)


def _heist() -> EnvSpec:
    # Heist's subtasks (keys, locks, gem) play the part of Crafter's achievements in the feedback prompt.
    module = importlib.import_module("envgen_jax.envs.heist")
    return EnvSpec(name="heist", title="Heist", config_cls=module.HeistConfig, achievements=tuple(module.ACHIEVEMENTS),
                   skills="subtasks")


def heist_spec(world_dim: int) -> EnvSpec:
    """Heist for one world size (9 easy, 13 hard): configs whose maze does not fit are sent back for repair."""
    return dataclasses.replace(_heist(), check=lambda config, where: config.fit_problems(world_dim, where))


_FACTORIES: dict[str, Callable[[], EnvSpec]] = {"crafter": _crafter, "heist": _heist}


def register_env_spec(name: str, factory: Callable[[], EnvSpec]) -> None:
    """Add (or replace) an environment; `factory` is called on first use."""
    _FACTORIES[name] = factory


def env_names() -> tuple[str, ...]:
    return tuple(_FACTORIES)


def get_env_spec(name: str | EnvSpec) -> EnvSpec:
    if isinstance(name, EnvSpec):
        return name
    if name not in _FACTORIES:
        raise LLMError(f"unknown environment {name!r}; known: {', '.join(_FACTORIES)}")
    return _FACTORIES[name]()
