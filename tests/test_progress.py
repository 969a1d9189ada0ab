"""The progress bar's ETA leaves the first chunk's compile time out (run/progress.py, tqdm's public interface)."""

import io

from envgen_jax.run.progress import Progress


def test_eta_comes_from_compiled_chunks_only():
    out = io.StringIO()
    bar = Progress(total=1000, done=200, enabled=True, file=out)  # a resumed session: 200 steps done before it
    bar.set_description("cycle 1/4 train")
    first = bar.bar
    assert first.format_dict["rate"] is None and "?" in out.getvalue()  # no ETA while the first chunk compiles
    bar.chunk_done(100, seconds=99.0, agents=2)  # the first chunk: compiling, then running
    assert bar.bar is not first and bar.done == 300
    d = bar.bar.format_dict
    assert d["n"] - d["initial"] == 0 and d["rate"] is None  # its steps and time count toward no rate
    assert "compiled and ran the first chunk in 99s" in out.getvalue()
    bar.chunk_done(100, seconds=1.0, agents=2)  # a compiled chunk
    d = bar.bar.format_dict
    assert d["n"] == 400 and d["n"] - d["initial"] == 100  # the rate counts compiled chunks only
    assert d["prefix"] == "cycle 1/4 train"  # the description carries over to the new bar
    assert "200 steps/s" in out.getvalue()
    bar.close()


def test_a_disabled_bar_does_nothing():
    bar = Progress(total=10, done=0, enabled=False)
    bar.set_description("x")
    bar.set_postfix_str("y")
    bar.chunk_done(5, seconds=1.0, agents=1)
    bar.close()
    assert bar.bar is None and bar.done == 0
