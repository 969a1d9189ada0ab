"""Full Craftax's targeting map: which settings help which achievement, and the concepts a purpose may name (read
from craftax's rules: game_logic.py's crafting and floors, constants.py's mob tables; the generic logic is in
envgen_jax/llm/targeting.py).

Floors are named in the game's order (config.FLOORS). A floor's mobs (FLOOR_MOB_MAPPING): overworld zombies,
skeletons, cows; dungeon orc soldiers, orc mages, snails; gnomish mines gnome warriors, gnome archers, bats; sewers
lizards, kobolds, snails; vaults knights, archers, snails; troll mines trolls, deep things, bats; fire realm pigmen,
fire elementals, bats; ice realm frost trolls, ice elementals; graveyard the necromancer. A floor's ladder down
opens once 8 of its monsters are defeated (`ladders_open` opens them all); entering floor f is easiest from a start on
floor f - 1.

Data only: no config class is imported; tests check every path and value against CraftaxConfig's schema.
"""

from __future__ import annotations

from envgen_jax.llm.targeting import Concept, Lever, TargetMap, among, less, more

_W, _S, _I, _C = "world_settings", "start_settings", "inventory_settings", "creature_settings"
FLOORS = ("overworld", "dungeon", "gnomish mines", "sewers", "vaults", "troll mines", "fire realm", "ice realm",
          "graveyard")


def _key(floor: str) -> str:
    return floor.replace(" ", "_")


def start_on(*floors: str) -> Lever:
    return among(f"{_S}.start_floor", *floors)


def monsters(floor: str) -> Lever:
    return more(f"{_C}.{_key(floor)}_monsters")


def _item(name: str) -> Lever:
    return more(f"{_I}.{name}")


_WOOD, _STONE, _COAL, _IRON, _DIAMOND = (_item(i) for i in ("wood", "stone", "coal", "iron", "diamond"))
_RUBY, _SAPPHIRE, _SWORD, _PICKAXE = _item("ruby"), _item("sapphire"), _item("sword"), _item("pickaxe")
_TABLE, _FURNACE = more(f"{_W}.table_nearby"), more(f"{_W}.furnace_nearby")
_LADDERS, _PASSIVE = more(f"{_S}.ladders_open"), more(f"{_C}.passive_creatures")
_MOUNTAINS = more(f"{_W}.mountains")

# (achievement, floor) of every monster, in the mob tables' order.
MONSTERS = (("defeat_zombie", "overworld"), ("defeat_skeleton", "overworld"), ("defeat_orc_solider", "dungeon"),
            ("defeat_orc_mage", "dungeon"), ("defeat_gnome_warrior", "gnomish mines"),
            ("defeat_gnome_archer", "gnomish mines"), ("defeat_lizard", "sewers"), ("defeat_kobold", "sewers"),
            ("defeat_knight", "vaults"), ("defeat_archer", "vaults"), ("defeat_troll", "troll mines"),
            ("defeat_deep_thing", "troll mines"), ("defeat_pigman", "fire realm"),
            ("defeat_fire_elemental", "fire realm"), ("defeat_frost_troll", "ice realm"),
            ("defeat_ice_elemental", "ice realm"))
ENTER = tuple((f"enter_{'vault' if f == 'vaults' else _key(f)}", f) for f in FLOORS[1:])

CRAFTAX_LEVERS: dict[str, tuple[Lever, ...]] = {
    "collect_wood": (more(f"{_W}.trees"),),
    "place_table": (_WOOD,),
    "eat_cow": (_PASSIVE, _SWORD),
    "collect_sapling": (less(f"{_W}.mountains"),),
    "collect_drink": (more(f"{_W}.water"),),
    "make_wood_pickaxe": (_WOOD, _TABLE),
    "make_wood_sword": (_WOOD, _TABLE),
    "place_plant": (_item("sapling"),),
    "collect_stone": (_PICKAXE, _MOUNTAINS),
    "place_stone": (_STONE,),
    "eat_plant": (_item("sapling"),),
    "make_stone_pickaxe": (_WOOD, _STONE, _TABLE),
    "make_stone_sword": (_WOOD, _STONE, _TABLE),
    "wake_up": (less(f"{_C}.overworld_monsters"), more(f"{_C}.peaceful"), _STONE),
    "place_furnace": (_STONE,),
    "collect_coal": (more(f"{_W}.coal_rarity"), _PICKAXE, _MOUNTAINS),
    "collect_iron": (more(f"{_W}.iron_rarity"), _PICKAXE, _MOUNTAINS),
    "collect_diamond": (more(f"{_W}.diamond_rarity"), more(f"{_W}.diamond_nearby"), _PICKAXE),
    "make_iron_pickaxe": (_WOOD, _STONE, _COAL, _IRON, _TABLE, _FURNACE),
    "make_iron_sword": (_WOOD, _STONE, _COAL, _IRON, _TABLE, _FURNACE),
    "make_arrow": (_WOOD, _STONE, _TABLE),
    "make_torch": (_WOOD, _COAL, _TABLE),
    "place_torch": (_item("torches"),),
    "make_diamond_pickaxe": (_DIAMOND, _WOOD, _TABLE, _FURNACE),
    "make_diamond_sword": (_DIAMOND, _WOOD, _TABLE, _FURNACE),
    "make_iron_armour": (_IRON, _COAL, _TABLE, _FURNACE),
    "make_diamond_armour": (_DIAMOND, _TABLE, _FURNACE),
    **{achievement: (start_on(FLOORS[FLOORS.index(floor) - 1]), _LADDERS, monsters(FLOORS[FLOORS.index(floor) - 1]))
       for achievement, floor in ENTER},
    **{achievement: (*((start_on(floor),) if floor != "overworld" else ()), monsters(floor), _SWORD)
       for achievement, floor in MONSTERS},
    "damage_necromancer": (start_on("graveyard"), _SWORD, _item("armour")),
    "defeat_necromancer": (start_on("graveyard"), _SWORD, _item("armour")),
    "eat_bat": (start_on("gnomish mines"), _PASSIVE),
    "eat_snail": (start_on("dungeon"), _PASSIVE),
    "find_bow": (start_on("dungeon"),),
    "fire_bow": (more(f"{_I}.bow"), _item("arrows")),
    "collect_sapphire": (start_on("gnomish mines"), more(f"{_W}.gnomish_mines_ores"), _PICKAXE),
    "collect_ruby": (start_on("gnomish mines", "fire realm"), more(f"{_W}.gnomish_mines_ores"), _PICKAXE),
    "learn_fireball": (_item("books"),),
    "cast_fireball": (_item("books"),),
    "learn_iceball": (_item("books"),),
    "cast_iceball": (_item("books"),),
    "open_chest": (start_on("dungeon"),),
    "drink_potion": (_item("potions"),),
    "enchant_sword": (start_on("sewers", "vaults"), _SWORD, _RUBY, _SAPPHIRE),
    "enchant_armour": (start_on("sewers", "vaults"), _item("armour"), _RUBY, _SAPPHIRE),
}
# The overworld's first ladder is open from the start; finding it (on a tunnel path) is helped by a pickaxe to dig.
CRAFTAX_LEVERS["enter_dungeon"] = (_PICKAXE, _MOUNTAINS)

_IRON_TOOL_NEEDS = ("collect_iron", "collect_coal", "place_furnace")
CRAFTAX_PREREQUISITES: dict[str, tuple[str, ...]] = {
    "collect_coal": ("make_wood_pickaxe",),
    "collect_diamond": ("make_iron_pickaxe",),
    "collect_iron": ("make_stone_pickaxe",),
    "collect_stone": ("make_wood_pickaxe",),
    "eat_plant": ("place_plant",),
    "make_iron_pickaxe": _IRON_TOOL_NEEDS,
    "make_iron_sword": _IRON_TOOL_NEEDS,
    "make_iron_armour": _IRON_TOOL_NEEDS,
    "make_stone_pickaxe": ("collect_stone",),
    "make_stone_sword": ("collect_stone",),
    "make_wood_pickaxe": ("place_table",),
    "make_wood_sword": ("place_table",),
    "place_furnace": ("collect_stone",),
    "place_plant": ("collect_sapling",),
    "place_stone": ("collect_stone",),
    "place_table": ("collect_wood",),
    "make_arrow": ("collect_stone",),
    "make_torch": ("collect_coal",),
    "place_torch": ("make_torch",),
    "make_diamond_pickaxe": ("collect_diamond",),
    "make_diamond_sword": ("collect_diamond",),
    "make_diamond_armour": ("collect_diamond",),
    "fire_bow": ("find_bow", "make_arrow"),
    "cast_fireball": ("learn_fireball",),
    "cast_iceball": ("learn_iceball",),
    "defeat_necromancer": ("damage_necromancer",),
    "damage_necromancer": ("enter_graveyard",),
    **{achievement: (ENTER[i - 1][0],) for i, (achievement, _) in enumerate(ENTER) if i},
    **{achievement: (dict((f, a) for a, f in ENTER)[floor],)
       for achievement, floor in MONSTERS if floor != "overworld"},
}

# A material's name also names the tools made of it ("a diamond sword", "pickaxe: stone").
_TOOLS = (_PICKAXE, _SWORD)
# Floors are not concepts: a purpose names them as places of monsters or ores as often as a starting floor.
CRAFTAX_CONCEPTS = (
    Concept(("wood", "tree"), (_WOOD, more(f"{_W}.trees"), *_TOOLS), (less(f"{_W}.trees"),), ("collect_wood",)),
    Concept(("stone",), (_STONE, _MOUNTAINS, *_TOOLS), skills=("collect_stone", "place_stone")),
    Concept(("coal",), (_COAL, more(f"{_W}.coal_rarity")), (less(f"{_W}.coal_rarity"),), ("collect_coal",)),
    Concept(("iron",), (_IRON, more(f"{_W}.iron_rarity"), *_TOOLS, _item("armour")), (less(f"{_W}.iron_rarity"),),
            ("collect_iron",)),
    Concept(("diamond",), (_DIAMOND, more(f"{_W}.diamond_rarity"), more(f"{_W}.diamond_nearby"), *_TOOLS,
                           _item("armour")), skills=("collect_diamond",)),  # already as rare as it gets
    Concept(("sapphire",), (_SAPPHIRE, more(f"{_W}.gnomish_mines_ores")), skills=("collect_sapphire",)),
    Concept(("ruby",), (_RUBY, more(f"{_W}.gnomish_mines_ores"), more(f"{_W}.fire_realm_ores")),
            skills=("collect_ruby",)),
    *(Concept((f"{m} {kind}",), (lever,), skills=(f"make_{m}_{kind}",)) for m in ("wood", "stone", "iron", "diamond")
      for kind, lever in (("pickaxe", _PICKAXE), ("sword", _SWORD))),
    *(Concept((f"{m} armour", f"{m} armor"), (_item("armour"),), skills=(f"make_{m}_armour",))
      for m in ("iron", "diamond")),
    Concept(("pickaxe",), (_PICKAXE,)),
    Concept(("sword", "weapon"), (_SWORD,)),
    Concept(("armour", "armor"), (_item("armour"),), skills=("make_iron_armour", "make_diamond_armour")),
    Concept(("bow",), (more(f"{_I}.bow"),), skills=("find_bow", "fire_bow")),
    Concept(("arrow",), (_item("arrows"),), skills=("make_arrow",)),
    Concept(("torch",), (_item("torches"),), skills=("make_torch", "place_torch")),
    Concept(("potion",), (_item("potions"),), skills=("drink_potion",)),
    Concept(("book", "spell"), (_item("books"),), skills=("learn_fireball", "learn_iceball")),
    Concept(("crafting table", "table"), (_TABLE,), skills=("place_table",)),
    Concept(("furnace",), (_FURNACE,), skills=("place_furnace",)),
    Concept(("water", "lake"), (more(f"{_W}.water"),), skills=("collect_drink",)),
    Concept(("ladder", "ladders"), (_LADDERS,)),
    Concept(("cow", "food"), (_PASSIVE,), (less(f"{_C}.passive_creatures"),), ("eat_cow",)),
    Concept(("monster", "enemy", "mob"), tuple(monsters(f) for f in FLOORS), (more(f"{_C}.peaceful"),)),
    Concept(("peaceful",), (more(f"{_C}.peaceful"),)),
)

TARGETING = TargetMap("craftax", CRAFTAX_LEVERS, CRAFTAX_PREREQUISITES, CRAFTAX_CONCEPTS)
