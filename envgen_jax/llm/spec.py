"""What the designer needs to know about one game: its config class, its achievements, its prompt files and its
targeting map. The game builds it (`envgen_jax.games`: `games.get(name).designer_spec(env)`); nothing here knows a
game by name.

The machinery (prompts, client, validation, replay) is generic; a game plugs in with an `EnvSpec` and four text
files in its own prompts folder (`prompts_dir`, e.g. envgen_jax/envs/heist/prompts/): `generate.txt`,
`feedback.txt`, `rules.txt` and `needs.txt` (one "achievement: what it needs" line per achievement). The prompt
files shared by every game stay in this package's `prompts/` (PROMPTS_DIR).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from envgen_jax.llm.errors import LLMError

if TYPE_CHECKING:
    from envgen_jax.llm.targeting import TargetMap

PROMPTS_DIR = Path(__file__).parent / "prompts"  # the prompt files every game shares (output format, repair, ...)
TEMPLATE_KINDS = ("generate", "feedback", "rules", "needs")


@dataclasses.dataclass(frozen=True)
class EnvSpec:
    """One game as the designer sees it."""

    name: str                          # the game's name (designer states and transcripts record it)
    title: str                         # the game's name inside prompts, e.g. "Crafter"
    config_cls: type                   # a SchemaConfig dataclass: validator, JSON schema and settings text
    achievements: tuple[str, ...]      # the names success rates are reported under (achievements or subtasks)
    skills: str = "achievements"       # what the prompts call them ("subtasks" for Heist)
    prompts_dir: Path = PROMPTS_DIR    # the game's own templates: generate.txt, feedback.txt, rules.txt, needs.txt
    # Extra run-specific checks on a validated config, (config, where) -> problems, sent back for repair like any
    # other problem; e.g. Heist's maze size against the world size of the mode being trained.
    check: Callable[[Any, str], list[str]] | None = None
    # Which settings help which achievement and what purposes may name (llm/targeting.py); None: designs are not
    # checked against their targets or purposes.
    targeting: TargetMap | None = None

    def template_path(self, kind: str) -> Path:
        return self.prompts_dir / f"{kind}.txt"

    def needs(self) -> dict[str, str]:
        """achievement -> what it needs, from `needs.txt` (one "name: text" line each; every achievement)."""
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
            raise LLMError(f"prompt template {path} is missing; every game needs "
                           f"{', '.join(f'{k}.txt' for k in TEMPLATE_KINDS)} in its prompts folder "
                           f"{self.prompts_dir}") from None
