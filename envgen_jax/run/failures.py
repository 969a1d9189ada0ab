"""A fused run's failed members: there an error in one method's host work (its design step, say) fails that method
only, named and its traceback kept, and the others go on; a run of one method raises the error as it is."""

from __future__ import annotations

import traceback

from envgen_jax.run.distributed import explain_failure


class MemberFailures:
    """`guarded(member, work)` runs a member's host work; `errors` and `tracebacks` (run directory name -> text) hold
    the members that failed."""

    def __init__(self, fused: bool):
        self.fused = fused
        self.errors: dict[str, str] = {}
        self.tracebacks: dict[str, str] = {}

    def failed(self, member) -> bool:
        return member.out.name in self.errors

    def guarded(self, member, work) -> None:
        if not self.fused:
            return work()
        try:
            work()
        except Exception as e:  # noqa: BLE001 -- one failed method must not lose the others
            if explain_failure(e):  # a process of a multi-process run is gone: nothing more can run
                raise
            name = member.out.name
            self.errors[name], self.tracebacks[name] = f"{type(e).__name__}: {e}", traceback.format_exc()
            member.log.error(f"{member.cfg.method} failed ({self.errors[name]}); the other methods go on")
