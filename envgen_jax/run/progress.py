"""The run's progress bar (tqdm, through its public interface), whose ETA leaves out the first chunk's compile time."""

from __future__ import annotations


class Progress:
    """A tqdm bar over a run's env steps per seed. The session's first chunk includes compilation (minutes on a CPU),
    which would make the ETA several times too long, so until it is done the bar shows no ETA, and then a new bar
    starts at the steps done (tqdm's `initial`): its rate, ETA and elapsed time count compiled chunks only."""

    def __init__(self, total: int, done: int, enabled: bool, file=None):
        self.total, self.enabled, self.file = total, enabled, file  # file: tqdm's (None: standard error)
        self.description, self.compiled = "", False
        self.bar = self._new_bar(done, leave=False)

    def _new_bar(self, done: int, leave: bool = True):
        if not self.enabled:
            return None
        from tqdm.auto import tqdm
        return tqdm(total=self.total, initial=done, unit="step", unit_scale=True, dynamic_ncols=True, leave=leave, file=self.file,
                    desc=self.description or None,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
                               "{postfix}]")

    @property
    def done(self) -> int:
        return 0 if self.bar is None else self.bar.n

    def set_description(self, text: str) -> None:
        self.description = text
        if self.bar is not None:
            self.bar.set_description(text)

    def set_postfix_str(self, text: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(text)

    def chunk_done(self, steps: int, seconds: float, agents: int) -> None:
        """Advance by a chunk of `steps` env steps per seed that took `seconds` (all `agents` together)."""
        if self.bar is None:
            return
        if self.compiled:
            self.bar.update(steps)
            self.bar.set_postfix_str(f"{steps * agents / seconds:,.0f} steps/s")
            return
        done = self.bar.n + steps
        self.bar.close()
        self.bar, self.compiled = self._new_bar(done), True
        self.bar.set_postfix_str(f"compiled and ran the first chunk in {seconds:.0f}s")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
