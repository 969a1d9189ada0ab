"""The progress bar's ETA leaves the first chunk's compile time out."""

import io

from tqdm import tqdm

from envgen_jax.run.progress import count_steps_not_time as _count_steps_not_time


def test_eta_comes_from_compiled_chunks_only():
    clock = [0.0]
    bar = tqdm(total=1000, file=io.StringIO(), mininterval=0, miniters=1)
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = 0.0
    try:
        clock[0] = 100.0  # first chunk: 99 s compiling + 1 s running 100 steps
        _count_steps_not_time(bar, 100)
        assert bar.n == 100 and bar.format_dict["rate"] is None
        assert "?" in bar.format_meter(**{**bar.format_dict, "bar_format": "{remaining}"})  # no ETA yet
        clock[0] = 101.0  # a compiled chunk: 100 steps in 1 s
        bar.update(100)
        d = bar.format_dict
        assert abs(d["rate"] - 100.0) < 1e-6  # the whole-session average would be 200 / 101 s
        assert d["elapsed"] == 101.0  # elapsed stays the true wall time
        remaining = (d["total"] - d["n"]) / d["rate"]
        assert abs(remaining - 8.0) < 1e-6
    finally:
        bar._time = lambda: 0.0
        bar.close()


def test_a_disabled_bar_is_left_alone():
    bar = tqdm(total=10, disable=True)
    _count_steps_not_time(bar, 5)
    assert bar.n == 0
