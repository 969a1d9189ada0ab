"""The run's progress bar (tqdm), whose ETA leaves out the first chunk's compile time."""

from __future__ import annotations


class _NoBar:
    def update(self, n): pass
    def set_description(self, s): pass
    def set_postfix_str(self, s): pass
    def close(self): pass


def progress_bar(total: int, done: int, enabled: bool):
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm
    return tqdm(total=total, initial=done, unit="step", unit_scale=True, dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {postfix}]")


def count_steps_not_time(bar, steps: int) -> None:
    """Add a chunk's steps but not its time to tqdm's rate: the first chunk of a session includes compilation
    (minutes on a CPU), which would make the ETA several times too long. Until a compiled chunk is timed the ETA
    reads '?'."""
    if getattr(bar, "disable", True):
        return
    bar.n += steps
    bar.initial = bar.last_print_n = bar.n  # tqdm's rate: (n - initial) / elapsed, or its EMA of later updates
    bar.last_print_t = bar._time()
    bar.refresh()


def chunk_done(bar, steps: int, seconds: float, agents: int, compiled: bool) -> None:
    """Advance the bar by a chunk of `steps` env steps per seed that took `seconds`; the session's first chunk
    (`compiled` False) includes compilation, so its time is left out of the rate."""
    if compiled:
        bar.update(steps)
        bar.set_postfix_str(f"{steps * agents / seconds:,.0f} steps/s")
    else:
        count_steps_not_time(bar, steps)
        bar.set_postfix_str(f"compiled and ran the first chunk in {seconds:.0f}s")
