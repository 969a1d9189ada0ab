"""Heist's targeting map: which settings help which subtask, and the concepts a purpose may name (read from
heist-rules.md; the generic logic and the meaning of more/less/among are in envgen_jax/llm/targeting.py).

Data only: no config class is imported; tests check every path and value against HeistConfig's schema.
"""

from __future__ import annotations

from envgen_jax.llm.targeting import Concept, Lever, TargetMap, among, more

_M, _P, _S = "maze_settings", "placement_settings", "start_settings"
SMALL_MAZE = among(f"{_M}.maze_dim", 7, 5)  # Procgen's hard draw averages 9; 7 first: room for 3 doors (scripted)
_KEYS_NEAR = among(f"{_P}.key_distance", "near")


def _keys(*counts: int) -> Lever:
    """A level that surely has these doors: Procgen's draw gives no door in 10% of hard levels, fewer than three
    in half of them."""
    return among(f"{_M}.num_keys", *counts)


def _start_with(colour: str) -> Lever:
    return more(f"{_S}.start_with_{colour}_key")


# heist-rules.md: the chain key blue -> door blue -> key green -> door green -> key red -> door red -> gem; a key
# lies before its door; a key in hand opens its door on touch (and is not placed, so it never helps its own
# collect_key); smaller mazes have shorter paths.
HEIST_LEVERS: dict[str, tuple[Lever, ...]] = {
    "collect_key_blue": (_KEYS_NEAR, SMALL_MAZE, _keys(1, 2, 3)),
    "collect_key_green": (_KEYS_NEAR, SMALL_MAZE, _keys(2, 3)),
    "collect_key_red": (_KEYS_NEAR, SMALL_MAZE, _keys(3)),
    "open_lock_blue": (_start_with("blue"), SMALL_MAZE),
    "open_lock_green": (_start_with("green"), SMALL_MAZE),
    "open_lock_red": (_start_with("red"), SMALL_MAZE),
    "collect_gem": (among(f"{_P}.gem_distance", "near"), SMALL_MAZE, _keys(0, 1),
                    _start_with("blue"), _start_with("green"), _start_with("red")),
}
HEIST_PREREQUISITES: dict[str, tuple[str, ...]] = {
    "open_lock_blue": ("collect_key_blue",), "collect_key_green": ("open_lock_blue",),
    "open_lock_green": ("collect_key_green",), "collect_key_red": ("open_lock_green",),
    "open_lock_red": ("collect_key_red",),
}


def _colour_key(colour: str, index: int) -> tuple[Concept, Concept]:
    doors = _keys(*range(index + 1, 4))
    return (Concept((f"{colour} key",), (_start_with(colour), _KEYS_NEAR, doors), skills=(f"collect_key_{colour}",)),
            Concept((f"{colour} door", f"{colour} lock"), (doors,), skills=(f"open_lock_{colour}",)))


HEIST_CONCEPTS = (
    *(c for i, colour in enumerate(("blue", "green", "red")) for c in _colour_key(colour, i)),
    Concept(("key",), (_KEYS_NEAR, _start_with("blue"), _start_with("green"), _start_with("red")),
            (_keys(0),), tuple(f"collect_key_{c}" for c in ("blue", "green", "red"))),
    Concept(("door", "lock"), (_keys(1, 2, 3),), (_keys(0, 1),),
            tuple(f"open_lock_{c}" for c in ("blue", "green", "red"))),
    Concept(("gem",), (among(f"{_P}.gem_distance", "near"),), skills=("collect_gem",)),
    Concept(("small maze", "smaller maze", "tiny maze", "short maze"), (SMALL_MAZE,)),
    Concept(("large maze", "larger maze", "big maze", "bigger maze"), (among(f"{_M}.maze_dim", 11, 13),)),
)


TARGETING = TargetMap("heist", HEIST_LEVERS, HEIST_PREREQUISITES, HEIST_CONCEPTS)
