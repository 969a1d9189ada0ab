"""Pictures of generated Crafter worlds: the whole 64x64 map in a clear colour code with a legend."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import jax
import numpy as np
from craftax.craftax_classic.constants import BlockType

from envgen_jax.envs.crafter.config import CrafterConfig

COLOURS = {  # block -> RGB, chosen to read at a glance
    "GRASS": (120, 190, 90), "WATER": (60, 120, 220), "STONE": (140, 140, 140), "TREE": (30, 100, 40),
    "WOOD": (150, 100, 50), "PATH": (200, 190, 160), "COAL": (30, 30, 30), "IRON": (200, 120, 80),
    "DIAMOND": (90, 240, 240), "CRAFTING_TABLE": (170, 110, 40), "FURNACE": (100, 60, 60), "SAND": (235, 220, 150),
    "LAVA": (240, 80, 20), "PLANT": (170, 230, 100), "RIPE_PLANT": (220, 230, 60), "INVALID": (0, 0, 0),
    "OUT_OF_BOUNDS": (0, 0, 0),
}
PALETTE = np.array([COLOURS[b.name] for b in BlockType], np.uint8)


def generate_maps(configs: Sequence[CrafterConfig], seed: int = 0) -> np.ndarray:
    """The initial block map (i32[K, 64, 64]) of each configuration for one seed."""
    from envgen_jax.envs.crafter.env import CrafterEnv, make_params
    env, bank = CrafterEnv(), make_params(configs)
    keys = jax.numpy.stack([jax.random.PRNGKey(seed)] * len(configs))
    _, state = jax.jit(jax.vmap(env.reset))(keys, bank.params)
    return np.asarray(state.map)


def block_counts(block_map: np.ndarray) -> dict[str, int]:
    counts = np.bincount(block_map.ravel(), minlength=len(BlockType))
    return {b.name.lower(): int(counts[b.value]) for b in BlockType if counts[b.value]}


def save_world_pictures(configs: Sequence[CrafterConfig], path: str | Path, seed: int = 0,
                        titles: Sequence[str] | None = None) -> Path:
    """One panel per configuration, with a legend of the blocks present and the start marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    maps = generate_maps(configs, seed)
    k = len(configs)
    fig, axes = plt.subplots(1, k, figsize=(4.2 * k + 2.2, 4.8), squeeze=False)
    present = sorted(set(np.unique(maps).tolist()))
    for i, (ax, block_map) in enumerate(zip(axes[0], maps)):
        ax.imshow(PALETTE[block_map], interpolation="nearest")
        ax.plot(32, 32, marker="*", color="red", markersize=10)  # the start (row 32, col 32)
        title = titles[i] if titles else configs[i].summary()
        ax.set_title("\n".join(_wrap(title, 48)[:4]), fontsize=8)
        ax.set_xticks([]), ax.set_yticks([])
    handles = [Patch(color=PALETTE[b] / 255, label=BlockType(b).name.lower()) for b in present]
    handles.append(plt.Line2D([], [], marker="*", color="red", linestyle="", label="start"))
    fig.legend(handles=handles, loc="center right", fontsize=8, frameon=False)
    fig.suptitle(f"Crafter worlds (seed {seed})", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1 - 2.0 / (4.2 * k + 2.2), 1))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _wrap(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return lines + [line] if line else lines
