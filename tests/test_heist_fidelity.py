"""The fidelity benchmark's numpy half (shared with the Procgen oracle): frame parsing, level statistics, tests."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "heist_fidelity.py"
spec = importlib.util.spec_from_file_location("heist_fidelity", PATH)
fidelity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fidelity)

# The open cells (x, y) of a 5x5 maze at offset (1, 2) of a 9x9 world; grids are [y, x] with y up. The start is
# (1, 2), the blue key (3, 2), the blue door (5, 4) and the gem (5, 6), 8 steps from the start.
OPEN = np.zeros((9, 9), bool)
for x, y in [(1, 2), (2, 2), (3, 2), (4, 2), (5, 2), (5, 3), (5, 4), (5, 5), (5, 6), (4, 6), (3, 6), (1, 3), (1, 4),
             (1, 5), (1, 6), (3, 5), (3, 4)]:
    OPEN[y, x] = True


def test_level_summary_reads_the_chain():
    summary = fidelity.level_summary(OPEN, (1, 2), [(5, 4), None, None], [(3, 2), None, None], (5, 6))
    assert summary == {"maze_dim": 5, "doors": 1, "gem_path": 8, "blue_key_path": 2, "solvable": True}
    behind = fidelity.level_summary(OPEN, (1, 2), [(5, 4), None, None], [(5, 6), None, None], (3, 6))
    assert not behind["solvable"]  # the key lies behind its own door


def test_parse_frame_of_a_monochrome_picture():
    world, size = 9, 64
    image = np.zeros((size, size, 3), np.uint8)
    centres = (np.arange(size) + 0.5) * world / size
    wx, wy = centres[None, :], world - centres[:, None]

    def paint(mask, colour):
        image[mask] = colour

    paint(~OPEN[np.floor(wy).astype(int), np.floor(wx).astype(int)], fidelity.MONO_WALL)

    def box(x, y, rx, ry):
        return (np.abs(wx - x) < rx) & (np.abs(wy - y) < ry)

    paint(box(5.5, 4.5, 0.5, 0.5), fidelity.MONO_LOCKS[0])
    paint(box(3.45, 2.6, 0.375, 0.23), fidelity.MONO_KEYS[0])
    paint(box(5.55, 6.5, 0.375, 0.26), fidelity.MONO_GEM)
    paint(box(1.5, 2.5, 0.375, 0.375), fidelity.MONO_PLAYER)
    assert fidelity._parse_frame(image, world) == fidelity.level_summary(
        OPEN, (1, 2), [(5, 4), None, None], [(3, 2), None, None], (5, 6))


def test_statistical_tests():
    same = fidelity.proportion_test([True] * 30 + [False] * 70, [True] * 31 + [False] * 69)
    assert same["p"] > 0.8
    assert fidelity.proportion_test([True] * 60 + [False] * 40, [True] * 20 + [False] * 80)["p"] < 1e-6
    pytest.importorskip("scipy")
    assert fidelity.welch_test([1, 2, 3, 4] * 50, [1, 2, 3, 4] * 50)["p"] == pytest.approx(1.0)
    chi = fidelity.chi2_test([5] * 50 + [7] * 50, [5] * 90 + [7] * 10)
    assert chi["p"] < 1e-6 and chi["counts_ours"] == [50, 50]
