"""Pictures of generated full-Craftax worlds: the floor each configuration starts on, as the player would find it.

The whole 48 x 48 floor in a colour code, dimmed where the floor is dark (craftax's light map: the overworld is lit,
the floors below are dark but for lava and the light around the ladder up), with the start, the ladders and the
9 x 11 view the agent sees at the start marked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import jax
import numpy as np
from craftax.craftax.constants import OBS_DIM, BlockType, ItemType

from envgen_jax.envs.craftax.config import CraftaxConfig

COLOURS = {  # block -> RGB, chosen to read at a glance
    "INVALID": (0, 0, 0), "OUT_OF_BOUNDS": (0, 0, 0), "GRASS": (120, 190, 90), "WATER": (60, 120, 220),
    "STONE": (140, 140, 140), "TREE": (30, 100, 40), "WOOD": (150, 100, 50), "PATH": (200, 190, 160),
    "COAL": (30, 30, 30), "IRON": (200, 120, 80), "DIAMOND": (90, 240, 240), "CRAFTING_TABLE": (170, 110, 40),
    "FURNACE": (100, 60, 60), "SAND": (235, 220, 150), "LAVA": (240, 80, 20), "PLANT": (170, 230, 100),
    "RIPE_PLANT": (220, 230, 60), "WALL": (70, 60, 60), "DARKNESS": (10, 10, 10), "WALL_MOSS": (60, 90, 60),
    "STALAGMITE": (120, 110, 100), "SAPPHIRE": (40, 80, 230), "RUBY": (220, 30, 60), "CHEST": (190, 140, 30),
    "FOUNTAIN": (120, 200, 240), "FIRE_GRASS": (200, 110, 60), "ICE_GRASS": (200, 230, 240),
    "GRAVEL": (170, 160, 150), "FIRE_TREE": (170, 60, 20), "ICE_SHRUB": (150, 200, 210),
    "ENCHANTMENT_TABLE_FIRE": (250, 140, 0), "ENCHANTMENT_TABLE_ICE": (0, 200, 250), "NECROMANCER": (130, 0, 160),
    "GRAVE": (90, 90, 110), "GRAVE2": (90, 90, 110), "GRAVE3": (90, 90, 110), "NECROMANCER_VULNERABLE": (190, 0, 220),
}
PALETTE = np.array([COLOURS[b.name] for b in BlockType], np.uint8)  # a KeyError here names a block without colour


def start_floors(configs: Sequence[CraftaxConfig], seed: int = 0) -> dict[str, np.ndarray]:
    """The starting floor of each configuration for one seed: block map, item map and light map [K, 48, 48], the
    start position [K, 2] and the floor [K]."""
    from envgen_jax.envs.craftax.env import CraftaxEnv
    from envgen_jax.envs.craftax.params import make_params
    env, bank = CraftaxEnv(), make_params(configs)
    keys = jax.numpy.stack([jax.random.PRNGKey(seed)] * len(configs))
    _, state = jax.jit(jax.vmap(env.reset))(keys, bank.params)
    game, rows = state.game, np.arange(len(configs))
    floor = np.asarray(game.player_level)
    return {"map": np.asarray(game.map)[rows, floor], "items": np.asarray(game.item_map)[rows, floor],
            "light": np.asarray(game.light_map)[rows, floor], "position": np.asarray(game.player_position),
            "floor": floor}


def picture(block_map: np.ndarray, light: np.ndarray) -> np.ndarray:
    """RGB u8[48, 48, 3]: the blocks' colours, dimmed to a fifth where the floor is dark."""
    shade = 0.2 + 0.8 * np.clip(light, 0.0, 1.0)
    return (PALETTE[block_map] * shade[..., None]).astype(np.uint8)


def save_start_floors(configs: Sequence[CraftaxConfig], path: str | Path, seed: int = 0) -> Path:
    """One panel per configuration: its starting floor, the start (star), ladders down (v) and up (^) and the view."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    from envgen_jax.envs.craftax.config import FLOORS
    floors, k = start_floors(configs, seed), len(configs)
    fig, axes = plt.subplots(1, k, figsize=(4.2 * k + 2.2, 4.8), squeeze=False)
    for i, ax in enumerate(axes[0]):
        ax.imshow(picture(floors["map"][i], floors["light"][i]), interpolation="nearest")
        row, col = floors["position"][i]
        ax.plot(col, row, marker="*", color="red", markersize=10)
        ax.add_patch(Rectangle((col - OBS_DIM[1] / 2, row - OBS_DIM[0] / 2), OBS_DIM[1], OBS_DIM[0], fill=False,
                               edgecolor="red", linewidth=0.8))
        for item, mark in ((ItemType.LADDER_DOWN, "v"), (ItemType.LADDER_UP, "^")):
            rows, cols = np.nonzero(floors["items"][i] == item.value)
            ax.plot(cols, rows, linestyle="", marker=mark, color="white", markeredgecolor="black", markersize=7)
        ax.set_title(f"{FLOORS[floors['floor'][i]]}: " + configs[i].summary()[:140], fontsize=7, wrap=True)
        ax.set_xticks([]), ax.set_yticks([])
    present = sorted(set(np.unique(floors["map"]).tolist()))
    handles = [Patch(color=PALETTE[b] / 255, label=BlockType(b).name.lower()) for b in present]
    fig.legend(handles=handles, loc="center right", fontsize=7, frameon=False)
    fig.suptitle(f"Craftax starting floors (seed {seed}; dark floors dimmed; red box: the agent's view)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 2.0 / (4.2 * k + 2.2), 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
