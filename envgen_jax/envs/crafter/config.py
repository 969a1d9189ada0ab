"""What an environment designer (an LLM or a person) may set in Crafter, and what each word means in numbers.

The first two sections are EnvGen's published schema; `creature_settings`, `episode_settings` and the two
`*_nearby` switches go beyond the paper. Every setting is optional and its default is Craftax-Classic's own value,
so `CrafterConfig.original()` is the unmodified game.
"""

from __future__ import annotations

import dataclasses

from envgen_jax.schema import SchemaConfig, setting

BIOMES = ("natural", "grassland", "mountain", "beaches")
RARITIES = ("rare", "common", "very common")
FREQUENCIES = ("none", "rare", "common", "very common")

ENV = "environment_settings"
INV = "inventory_settings"
MOBS = "creature_settings"
EPISODE = "episode_settings"

_material = "Starting count (0-9); it unlocks no achievement and pays no reward."
_tool = "Start with this tool (0 or 1); it unlocks no achievement and pays no reward."


@dataclasses.dataclass(frozen=True)
class CrafterConfig(SchemaConfig):
    ENV_NAME = "crafter"

    target_biome: str = setting(
        ENV, "natural", choices=BIOMES,
        doc="Which landscape dominates. natural = the original mix of all biomes; grassland = mostly grass, trees "
            "and cows, little stone; mountain = large stone areas with caves, ores, lava and skeletons, little water; "
            "beaches = more water and sand, little stone. Every biome keeps a pond to drink from and a stone outcrop "
            "with coal and iron near the start, so every skill stays learnable.")
    coal_rarity: str = setting(ENV, "common", choices=RARITIES,
                               doc="Share of stone tiles that are coal: rare 1.3%, common 4% (original), very common 8%.")
    iron_rarity: str = setting(ENV, "common", choices=RARITIES,
                               doc="Share of stone tiles that are iron: rare 1%, common 3% (original), very common 6%.")
    diamond_rarity: str = setting(
        ENV, "rare", choices=RARITIES,
        doc="Share of deep-mountain stone tiles that are diamond: rare 0.5% (original), common 5%, very common 10%.")
    tree_rarity: str = setting(ENV, "common", choices=RARITIES,
                               doc="Share of forest-area grass tiles with a tree: rare 10%, common 20% (original), "
                                   "very common 35%.")
    table_nearby: bool = setting(ENV, False, doc="A crafting table stands next to the starting position "
                                                 "(place_table is not unlocked by it).")
    furnace_nearby: bool = setting(ENV, False, doc="A furnace stands next to the starting position "
                                                   "(place_furnace is not unlocked by it).")

    sapling: int = setting(INV, 0, _material, minimum=0, maximum=9)
    wood: int = setting(INV, 0, _material, minimum=0, maximum=9)
    stone: int = setting(INV, 0, _material, minimum=0, maximum=9)
    coal: int = setting(INV, 0, _material, minimum=0, maximum=9)
    iron: int = setting(INV, 0, _material, minimum=0, maximum=9)
    diamond: int = setting(INV, 0, _material, minimum=0, maximum=9)
    wood_pickaxe: int = setting(INV, 0, _tool, minimum=0, maximum=1)
    stone_pickaxe: int = setting(INV, 0, _tool, minimum=0, maximum=1)
    iron_pickaxe: int = setting(INV, 0, _tool, minimum=0, maximum=1)
    wood_sword: int = setting(INV, 0, _tool, minimum=0, maximum=1)
    stone_sword: int = setting(INV, 0, _tool, minimum=0, maximum=1)
    iron_sword: int = setting(INV, 0, _tool, minimum=0, maximum=1)

    cows: str = setting(MOBS, "common", choices=FREQUENCIES,
                        doc="How often cows appear on grass: none, rare (half), common (original), very common (2x).")
    zombies: str = setting(MOBS, "common", choices=FREQUENCIES,
                           doc="How often zombies appear on grass, more at night: none, rare, common (original), "
                               "very common.")
    skeletons: str = setting(MOBS, "common", choices=FREQUENCIES,
                             doc="How often skeletons appear in dark tunnels: none, rare, common (original), "
                                 "very common.")
    peaceful: bool = setting(MOBS, False, doc="No zombies or skeletons at all (overrides their frequencies).")

    episode_length: int = setting(
        EPISODE, 10000, minimum=64, maximum=10000, suggested=(256, 512, 1024, 2048, 4096, 10000),
        doc="Steps before the episode is cut off (original 10000; EnvGen used 1024 in generated worlds).")
    day_length: int = setting(EPISODE, 300, minimum=50, maximum=1000, suggested=(100, 200, 300, 600, 1000),
                              doc="Steps in one day-night cycle (original 300); nights bring zombies and sleep.")

    def inventory(self) -> tuple[int, ...]:
        """Starting inventory in craftax's `Inventory` field order."""
        return tuple(getattr(self, name) for name in INVENTORY_ORDER)


# craftax.craftax_classic.envs.craftax_state.Inventory field order.
INVENTORY_ORDER = ("wood", "stone", "coal", "iron", "diamond", "sapling", "wood_pickaxe", "stone_pickaxe",
                   "iron_pickaxe", "wood_sword", "stone_sword", "iron_sword")

# Numbers behind the words. Index = position in RARITIES / FREQUENCIES. "common" (and "rare" for diamond) are
# exactly Craftax-Classic's constants, so the original config reproduces upstream world generation bit for bit.
COAL_CHANCE = (0.013, 0.04, 0.08)        # uniform < chance on stone
IRON_CHANCE = (0.01, 0.03, 0.06)         # uniform < chance on stone
DIAMOND_CHANCE = (0.005, 0.05, 0.10)     # uniform < chance on deep-mountain stone
TREE_THRESHOLD = (0.9, 0.8, 0.65)        # uniform > threshold inside forest noise
COW_CHANCE = (0.0, 0.05, 0.1, 0.2)
ZOMBIE_BASE_CHANCE = (0.0, 0.01, 0.02, 0.04)
ZOMBIE_NIGHT_CHANCE = (0.0, 0.05, 0.1, 0.2)
SKELETON_CHANCE = (0.0, 0.025, 0.05, 0.1)


@dataclasses.dataclass(frozen=True)
class BiomeShape:
    """How a biome bends the terrain noise; all zero/False for natural, i.e. upstream's generator."""

    water_shift: float = 0.0     # added to the water noise (water where > 0.7)
    mountain_shift: float = 0.0  # added to the mountain noise (stone where > 0.7)
    sand_low: float = 0.6        # sand where sand_low < water noise < 0.75
    forest_shift: float = 0.0    # added to the tree noise (forest where > 0.5)
    ensure_water: bool = False   # dig a pond near the start
    ensure_stone: bool = False   # raise a stone outcrop with coal and iron near the start


BIOME_SHAPES = {
    "natural": BiomeShape(),
    "grassland": BiomeShape(water_shift=-0.25, mountain_shift=-0.3, forest_shift=0.1, ensure_water=True,
                            ensure_stone=True),
    "mountain": BiomeShape(water_shift=-0.2, mountain_shift=0.18, ensure_water=True, ensure_stone=True),
    "beaches": BiomeShape(water_shift=0.1, mountain_shift=-0.3, sand_low=0.45, ensure_water=True, ensure_stone=True),
}
