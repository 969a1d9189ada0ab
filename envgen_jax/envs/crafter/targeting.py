"""Crafter's targeting map: which settings help which achievement, and the concepts a purpose may name (read from
Craftax-Classic's rules; the generic logic and the meaning of more/less/among are in envgen_jax/llm/targeting.py).

Data only: no config class is imported; tests check every path and value against CrafterConfig's schema.
"""

from __future__ import annotations

from envgen_jax.llm.targeting import Concept, Lever, TargetMap, among, less, more

_E, _I, _C = "environment_settings", "inventory_settings", "creature_settings"
_BIOME = f"{_E}.target_biome"
GRASSLAND, MOUNTAIN, BEACHES = among(_BIOME, "grassland"), among(_BIOME, "mountain"), among(_BIOME, "beaches")
_SWORDS = (more(f"{_I}.wood_sword"), more(f"{_I}.stone_sword"), more(f"{_I}.iron_sword"))
_TABLE, _FURNACE = more(f"{_E}.table_nearby"), more(f"{_E}.furnace_nearby")
_WOOD, _STONE, _COAL, _IRON = (more(f"{_I}.{item}") for item in ("wood", "stone", "coal", "iron"))

# Craftax-Classic's rules (game_logic.py): a table costs wood; wood tools need wood at a table, stone tools wood and
# stone at a table, iron tools wood, stone, coal and iron at a table and a furnace; a furnace costs stone; stone and
# coal need a wood pickaxe, iron a stone pickaxe, diamond an iron pickaxe; ores lie in mountains, trees, cows and
# zombies on grass, skeletons in mountain tunnels; the attack damage (cows, zombies, skeletons alike) is the best
# sword's; a sleeper wakes up (wake_up) once rested unless attacked first, so fewer zombies and stone to wall
# oneself in help; saplings are found in grass and planted there.
CRAFTER_LEVERS: dict[str, tuple[Lever, ...]] = {
    "collect_coal": (more(f"{_E}.coal_rarity"), more(f"{_I}.wood_pickaxe"), MOUNTAIN),
    "collect_diamond": (more(f"{_E}.diamond_rarity"), more(f"{_I}.iron_pickaxe"), MOUNTAIN),
    "collect_drink": (BEACHES,),
    "collect_iron": (more(f"{_E}.iron_rarity"), more(f"{_I}.stone_pickaxe"), MOUNTAIN),
    "collect_sapling": (GRASSLAND,),
    "collect_stone": (more(f"{_I}.wood_pickaxe"), MOUNTAIN),
    "collect_wood": (more(f"{_E}.tree_rarity"), GRASSLAND),
    "defeat_skeleton": (more(f"{_C}.skeletons"), MOUNTAIN, *_SWORDS),
    "defeat_zombie": (more(f"{_C}.zombies"), GRASSLAND, *_SWORDS),
    "eat_cow": (more(f"{_C}.cows"), GRASSLAND, *_SWORDS),
    "eat_plant": (more(f"{_I}.sapling"), GRASSLAND),
    "make_iron_pickaxe": (_WOOD, _STONE, _COAL, _IRON, _TABLE, _FURNACE),
    "make_iron_sword": (_WOOD, _STONE, _COAL, _IRON, _TABLE, _FURNACE),
    "make_stone_pickaxe": (_WOOD, _STONE, _TABLE),
    "make_stone_sword": (_WOOD, _STONE, _TABLE),
    "make_wood_pickaxe": (_WOOD, _TABLE),
    "make_wood_sword": (_WOOD, _TABLE),
    "place_furnace": (_STONE,),
    "place_plant": (more(f"{_I}.sapling"), GRASSLAND),
    "place_stone": (_STONE,),
    "place_table": (_WOOD,),
    "wake_up": (less(f"{_C}.zombies"), more(f"{_C}.peaceful"), _STONE),
}

_IRON_TOOL_NEEDS = ("collect_iron", "collect_coal", "place_furnace")  # wood, stone and a table come before iron
CRAFTER_PREREQUISITES: dict[str, tuple[str, ...]] = {
    "collect_coal": ("make_wood_pickaxe",),
    "collect_diamond": ("make_iron_pickaxe",),
    "collect_iron": ("make_stone_pickaxe",),
    "collect_stone": ("make_wood_pickaxe",),
    "eat_plant": ("place_plant",),
    "make_iron_pickaxe": _IRON_TOOL_NEEDS,
    "make_iron_sword": _IRON_TOOL_NEEDS,
    "make_stone_pickaxe": ("collect_stone",),
    "make_stone_sword": ("collect_stone",),
    "make_wood_pickaxe": ("place_table",),
    "make_wood_sword": ("place_table",),
    "place_furnace": ("collect_stone",),
    "place_plant": ("collect_sapling",),
    "place_stone": ("collect_stone",),
    "place_table": ("collect_wood",),
}


def _inventory(item: str) -> Lever:
    return more(f"{_I}.{item}")


def _tool(material: str, kind: str) -> Concept:
    words = (f"{material} {kind}", f"wooden {kind}") if material == "wood" else (f"{material} {kind}",)
    return Concept(words, (_inventory(f"{material}_{kind}"),), skills=(f"make_{material}_{kind}",))


_MOB_REMOVED = {m: (less(f"{_C}.{m}s"), more(f"{_C}.peaceful")) for m in ("zombie", "skeleton")}
CRAFTER_CONCEPTS = (
    *(_tool(m, k) for m in ("wood", "stone", "iron") for k in ("pickaxe", "sword")),
    *(Concept((f"{m} tool",) + (("wooden tool",) if m == "wood" else ()),
              (_inventory(f"{m}_pickaxe"), _inventory(f"{m}_sword")),
              skills=(f"make_{m}_pickaxe", f"make_{m}_sword")) for m in ("wood", "stone", "iron")),
    Concept(("pickaxe",), tuple(_inventory(f"{m}_pickaxe") for m in ("wood", "stone", "iron")),
            skills=tuple(f"make_{m}_pickaxe" for m in ("wood", "stone", "iron"))),
    Concept(("sword", "weapon"), _SWORDS, skills=tuple(f"make_{m}_sword" for m in ("wood", "stone", "iron"))),
    Concept(("wood", "tree", "log"), (_WOOD, more(f"{_E}.tree_rarity"), GRASSLAND), (less(f"{_E}.tree_rarity"),),
            ("collect_wood",)),
    Concept(("stone",), (_STONE, MOUNTAIN), skills=("collect_stone", "place_stone")),
    *(Concept((ore,), (_inventory(ore), more(f"{_E}.{ore}_rarity"), MOUNTAIN), (less(f"{_E}.{ore}_rarity"),),
              (f"collect_{ore}",)) for ore in ("coal", "iron")),
    Concept(("diamond",), (_inventory("diamond"), more(f"{_E}.diamond_rarity"), MOUNTAIN),
            skills=("collect_diamond",)),  # already as rare as it gets
    Concept(("sapling", "plant", "seed"), (_inventory("sapling"), GRASSLAND),
            skills=("collect_sapling", "place_plant", "eat_plant")),
    Concept(("water", "drink", "pond", "lake"), (BEACHES,), skills=("collect_drink",)),
    Concept(("cow",), (more(f"{_C}.cows"), GRASSLAND), (less(f"{_C}.cows"),), ("eat_cow",)),
    Concept(("zombie",), (more(f"{_C}.zombies"),), _MOB_REMOVED["zombie"], ("defeat_zombie",)),
    Concept(("skeleton",), (more(f"{_C}.skeletons"),), _MOB_REMOVED["skeleton"], ("defeat_skeleton",)),
    Concept(("enemy", "monster", "mob"), (more(f"{_C}.zombies"), more(f"{_C}.skeletons")),
            _MOB_REMOVED["zombie"] + _MOB_REMOVED["skeleton"], ("defeat_zombie", "defeat_skeleton")),
    Concept(("peaceful",), (more(f"{_C}.peaceful"), less(f"{_C}.zombies"))),
    Concept(("crafting table", "table", "workbench"), (_TABLE,), skills=("place_table",)),
    Concept(("furnace",), (_FURNACE,), skills=("place_furnace",)),
    Concept(("mountain", "cave"), (MOUNTAIN,)),
    Concept(("grassland", "grass", "meadow"), (GRASSLAND,)),
    Concept(("beach", "sand"), (BEACHES,)),
    Concept(("sleep", "sleeping", "wake"), skills=("wake_up",)),
    Concept(("combat",), skills=("defeat_zombie", "defeat_skeleton")),
)


TARGETING = TargetMap("crafter", CRAFTER_LEVERS, CRAFTER_PREREQUISITES, CRAFTER_CONCEPTS)
