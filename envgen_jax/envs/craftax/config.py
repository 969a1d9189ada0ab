"""What an environment designer (an LLM or a person) may set in full Craftax, and what each word means in numbers.

Every setting is optional and its default is full Craftax's own value, so `CraftaxConfig.original()` is the
unmodified game (bit for bit: tests/test_craftax_env.py). The floors are named in the order the game builds them
(`FLOORS`: 0 overworld, 1 dungeon, 2 gnomish mines, ...; craftax's comments beside its spawn table label floors 1
and 2 the other way round, its world generation does not).

Terrain settings move the thresholds of craftax's own per-floor generator configuration (`SmoothGenConfig`); the
three dungeon floors (dungeon, sewers, vaults) are rooms and corridors with no terrain setting. Monster settings
scale craftax's per-floor spawn table; `peaceful` empties it of monsters.
"""

from __future__ import annotations

import dataclasses

from envgen_jax.schema import SchemaConfig, setting

FLOORS = ("overworld", "dungeon", "gnomish mines", "sewers", "vaults", "troll mines", "fire realm", "ice realm",
          "graveyard")
# The six floors craftax generates from noise, in the order of its stacked SmoothGenConfig (index = row there).
SMOOTH_FLOORS = ("overworld", "gnomish mines", "troll mines", "fire realm", "ice realm", "graveyard")
DEEP_SMOOTH = SMOOTH_FLOORS[1:5]  # the graveyard (the boss floor) has graves, not ores, and keeps its walls
RARITIES = ("rare", "common", "very common")
AMOUNTS = ("less", "standard", "more")
FREQUENCIES = ("none", "rare", "common", "very common")
TOOLS = ("none", "wood", "stone", "iron", "diamond")  # craftax's pickaxe and sword levels 0-4
ARMOUR = ("none", "iron", "diamond")                   # every one of the four pieces at this level

WORLD = "world_settings"
START = "start_settings"
INV = "inventory_settings"
MOBS = "creature_settings"
EPISODE = "episode_settings"

_item = "Starting count (0-9); it pays no reward and unlocks no achievement in this world."


def _key(floor: str) -> str:
    return floor.replace(" ", "_")


def _floor_settings() -> dict:
    """The per-floor settings: ores and rock on the four deep smooth floors, monsters on all nine."""
    fields = {}
    for floor in DEEP_SMOOTH:
        fields[f"{_key(floor)}_ores"] = setting(
            WORLD, "common", choices=RARITIES,
            doc=f"Ores of the {floor} (every ore its floor has): rare = half, common (original), very common = 2.5x.")
        fields[f"{_key(floor)}_rock"] = setting(
            WORLD, "standard", choices=AMOUNTS,
            doc=f"Solid rock in the {floor}, where ores lie: less (more open floor), standard (original), more.")
    for floor in FLOORS:
        fields[f"{_key(floor)}_monsters"] = setting(
            MOBS, "common", choices=FREQUENCIES,
            doc=f"How often the {floor}'s monsters appear: none, rare (half), common (original), very common "
                f"(2.5x).")
    return fields


# Declared from a table so that the nine floors' settings stay one line each; dataclasses read the namespace.
_FLOOR_FIELDS = _floor_settings()


@dataclasses.dataclass(frozen=True)
class CraftaxConfig(SchemaConfig):
    ENV_NAME = "craftax"

    water: str = setting(WORLD, "common", choices=RARITIES,
                         doc="Lakes on the overworld: rare, common (original), very common.")
    sand: str = setting(WORLD, "common", choices=RARITIES,
                        doc="Sand beaches around the overworld's lakes: rare, common (original), very common.")
    trees: str = setting(WORLD, "common", choices=RARITIES,
                         doc="Trees in the overworld's forests: rare, common (original), very common.")
    mountains: str = setting(WORLD, "standard", choices=AMOUNTS,
                             doc="Stone mountains on the overworld (with their tunnels, caves and lava): less, "
                                 "standard (original), more.")
    coal_rarity: str = setting(WORLD, "common", choices=RARITIES,
                               doc="Coal in overworld stone: rare 1.2%, common 3% (original), very common 8%.")
    iron_rarity: str = setting(WORLD, "common", choices=RARITIES,
                               doc="Iron in overworld stone: rare 0.8%, common 2% (original), very common 5%.")
    diamond_rarity: str = setting(WORLD, "rare", choices=RARITIES,
                                  doc="Diamonds in overworld stone: rare 0.1% (original), common 1%, very common 3%.")
    gnomish_mines_ores: str = _FLOOR_FIELDS["gnomish_mines_ores"]
    gnomish_mines_rock: str = _FLOOR_FIELDS["gnomish_mines_rock"]
    troll_mines_ores: str = _FLOOR_FIELDS["troll_mines_ores"]
    troll_mines_rock: str = _FLOOR_FIELDS["troll_mines_rock"]
    fire_realm_ores: str = _FLOOR_FIELDS["fire_realm_ores"]
    fire_realm_rock: str = _FLOOR_FIELDS["fire_realm_rock"]
    ice_realm_ores: str = _FLOOR_FIELDS["ice_realm_ores"]
    ice_realm_rock: str = _FLOOR_FIELDS["ice_realm_rock"]
    table_nearby: bool = setting(WORLD, False, doc="A crafting table stands next to the start "
                                                   "(place_table is not unlocked by it).")
    furnace_nearby: bool = setting(WORLD, False, doc="A furnace stands next to the start "
                                                     "(place_furnace is not unlocked by it).")
    diamond_nearby: bool = setting(WORLD, False, doc="A diamond block lies two steps from the start, to be mined "
                                                     "with an iron pickaxe.")

    start_floor: str = setting(
        START, "overworld", choices=FLOORS,
        doc="The floor the agent starts on, at its ladder up. The floors above count as entered and cleared (their "
            "enter_* achievements are not available in this world, their ladders open) and the way back up is "
            "open (craftax builds the graveyard without a ladder up). Below the overworld it is dark: torches help.")
    health: int = setting(START, 9, "Starting health (1-9; original 9).", minimum=1, maximum=9)
    food: int = setting(START, 9, "Starting food (0-9; original 9).", minimum=0, maximum=9)
    drink: int = setting(START, 9, "Starting drink (0-9; original 9).", minimum=0, maximum=9)
    energy: int = setting(START, 9, "Starting energy (0-9; original 9); low energy makes the agent want to "
                                    "sleep.", minimum=0, maximum=9)
    mana: int = setting(START, 9, "Starting mana (0-9; original 9), spent on spells.", minimum=0, maximum=9)
    ladders_open: bool = setting(
        START, False,
        doc="Every floor counts as cleared: its ladder down opens without first defeating 8 of its monsters "
            "(and monsters appear at a third of the rate of an uncleared floor).")

    wood: int = setting(INV, 0, _item, minimum=0, maximum=9)
    stone: int = setting(INV, 0, _item, minimum=0, maximum=9)
    coal: int = setting(INV, 0, _item, minimum=0, maximum=9)
    iron: int = setting(INV, 0, _item, minimum=0, maximum=9)
    diamond: int = setting(INV, 0, _item, minimum=0, maximum=9)
    sapphire: int = setting(INV, 0, _item, minimum=0, maximum=9)
    ruby: int = setting(INV, 0, _item, minimum=0, maximum=9)
    sapling: int = setting(INV, 0, _item, minimum=0, maximum=9)
    pickaxe: str = setting(INV, "none", choices=TOOLS,
                           doc="The best pickaxe held at the start: none (original), wood, stone, iron, diamond.")
    sword: str = setting(INV, "none", choices=TOOLS,
                         doc="The best sword held at the start: none (original), wood, stone, iron, diamond.")
    armour: str = setting(INV, "none", choices=ARMOUR, doc="All four armour pieces at this level: none "
                                                           "(original), iron, diamond.")
    bow: bool = setting(INV, False, doc="Start with a bow (find_bow is not unlocked by it).")
    arrows: int = setting(INV, 0, _item, minimum=0, maximum=9)
    torches: int = setting(INV, 0, _item, minimum=0, maximum=9)
    potions: int = setting(INV, 0, "Starting potions of each of the six colours (0-3).", minimum=0, maximum=3)
    books: int = setting(INV, 0, "Starting books (0-2); reading one teaches a spell.", minimum=0, maximum=2)

    passive_creatures: str = setting(
        MOBS, "common", choices=FREQUENCIES,
        doc="How often cows, bats and snails (food) appear on every floor: none, rare (half), common (original), "
            "very common (2x).")
    overworld_monsters: str = _FLOOR_FIELDS["overworld_monsters"]
    dungeon_monsters: str = _FLOOR_FIELDS["dungeon_monsters"]
    gnomish_mines_monsters: str = _FLOOR_FIELDS["gnomish_mines_monsters"]
    sewers_monsters: str = _FLOOR_FIELDS["sewers_monsters"]
    vaults_monsters: str = _FLOOR_FIELDS["vaults_monsters"]
    troll_mines_monsters: str = _FLOOR_FIELDS["troll_mines_monsters"]
    fire_realm_monsters: str = _FLOOR_FIELDS["fire_realm_monsters"]
    ice_realm_monsters: str = _FLOOR_FIELDS["ice_realm_monsters"]
    graveyard_monsters: str = _FLOOR_FIELDS["graveyard_monsters"]
    peaceful: bool = setting(MOBS, False, doc="No monsters on any floor (overrides the floors' settings). A floor's "
                                              "ladder down then opens only with ladders_open.")

    episode_length: int = setting(
        EPISODE, 100000, minimum=64, maximum=100000, suggested=(512, 1024, 2048, 4096, 10000, 100000),
        doc="Steps before the episode is cut off (original 100000).")
    day_length: int = setting(EPISODE, 300, minimum=50, maximum=1000, suggested=(100, 200, 300, 600, 1000),
                              doc="Steps in one day-night cycle on the overworld (original 300); night brings "
                                  "more zombies.")

    def floor(self) -> int:
        return FLOORS.index(self.start_floor)


# Numbers behind the words. Index = position in the word tuple; the default word's entry is craftax's own value.
WATER_THRESHOLD = (0.8, 0.7, 0.55)     # water where the water noise > threshold
SAND_THRESHOLD = (0.65, 0.6, 0.45)     # sand where the water noise > threshold (and no water)
TREE_THRESHOLD = (0.9, 0.8, 0.65)      # a tree where forest noise and a uniform > threshold
MOUNTAIN_MAX = (0.85, 1.0, 1.15)       # the overworld's proximity term far from the start: the mountain noise's offset
OVERWORLD_ORE = ((0.012, 0.03, 0.08), (0.008, 0.02, 0.05), (0.001, 0.01, 0.03))  # coal, iron, diamond by rarity
ORE_SCALE = (0.5, 1.0, 2.5)            # deep floors: every ore chance times this
# Deep floors' rock: the mountain noise's proximity term (distance / strength, at most max) made larger or smaller:
# (added to max, strength times). Their max binds only far from the start, so the strength moves most of the floor.
ROCK = ((-0.15, 1 / 0.75), (0.0, 1.0), (0.15, 0.75))
PASSIVE_SCALE = (0.0, 0.5, 1.0, 2.0)
MONSTER_SCALE = (0.0, 0.5, 1.0, 2.5)
TABLE_AT, FURNACE_AT, DIAMOND_AT = (1, -1), (1, 1), (2, 0)  # offsets from the start (it faces up: row - 1 stays free)
