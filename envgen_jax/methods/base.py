"""What the methods share: the phases of a plan, the paper's cycle of phases, the design step's context, and the
`Method` base class whose default hooks are what the loop does for a method that overrides nothing."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, Callable

from envgen_jax.methods.rows import assign_rows
from envgen_jax.methods.view import RunView

logger = logging.getLogger("envgen_jax.run")

# The program family of the paper's loop (`Method.PROGRAM`): runs that differ only in data.
PAPER_LOOP = "paper loop"


@dataclasses.dataclass(frozen=True)
class Phase:
    kind: str    # design | train | evaluate
    cycle: int   # 0-based; cycle == cycles means the final phase
    where: str = ""   # train: llm | original | mixed | final, or a method's own (Method.WHERE)
    updates: int = 0  # train: PPO updates


def llm_cycle(cfg, c: int) -> list[Phase]:
    """Design, then train in the LLM environments and in the original game (or both at once, `mixing: mixed`)."""
    s = cfg.schedule
    if s.mixing == "mixed":
        return [Phase("design", c), Phase("train", c, "mixed", cfg.cycle_updates())]
    return [Phase("design", c), Phase("train", c, "llm", cfg.updates_for(s.llm_env_steps)),
            Phase("train", c, "original", cfg.updates_for(s.original_env_steps))]


@dataclasses.dataclass
class DesignContext:
    """One cycle's design step as a method sees it.

    cycle: 0-based; cycles: how many; n: environments per designer; num_designers: 1 (pooled) or one per seed;
    feedback: per designer, achievement -> (mean %, std %) from the previous evaluation (None in cycle 1);
    previous: the design records of earlier cycles; designers(): the LLM designers (made on first use);
    on_llm_call(seconds, n): the driver's bookkeeping after each LLM call that wrote n environments; status(text):
    progress line; learnability_notes: per designer, a note per environment of its previous design
    (`Method.designer_notes`), or None; inside: per designer, per environment of its previous design, the agent's
    success (%) per achievement inside that environment while it trained there (None in cycle 1 or when not
    measured)."""

    cfg: Any
    cycle: int
    cycles: int
    n: int
    num_designers: int
    feedback: list | None
    previous: list
    config_cls: type
    designers: Callable[[], list]
    on_llm_call: Callable[[float, int], None]
    status: Callable[[str], None] = lambda text: None
    learnability_notes: list | None = None
    inside: list | None = None

    def ask_each(self, request: Callable[[Any, Any], Any], n: int | None = None) -> list[dict]:
        """`request(designer, feedback_or_None) -> Design` for each designer in order, timed and counted; `n`:
        the environments each request asks for (default `self.n`), for the progress line."""
        out = []
        feedback = self.feedback
        for i, designer in enumerate(self.designers()):
            self.status(f"LLM step: asking for {n or self.n} environments ({self.cfg.method}, cycle {self.cycle + 1})")
            start = time.monotonic()
            design = request(designer, feedback[i] if feedback else None)
            self.on_llm_call(time.monotonic() - start, len(design.configs))
            record = {"configs": [c.to_dict() for c in design.configs], "purposes": list(design.purposes)}
            if any(getattr(designer, "targets", None) or ()):  # llm.targets: what each environment says it trains
                record["targets"] = [list(t) for t in designer.targets]
            out.append(record)
        return out


class Method:
    """A method of the comparison. The defaults are the paper's loop: the bank holds the original game (row 0) and
    the latest design's environments, and each phase's slots run fixed rows (`rows.assign_rows`).

    Class-level hooks are functions of the run configuration, called on the class (the plan, the dry run and
    RunConfig ask them before any run exists). Instance hooks belong to one run: the loop makes `cls(run, trainer)`
    with its `RunView` and PPO trainer, loads the method's saved state (`load_state`) and calls the hooks around
    its phases and chunks. `state_dict()` is saved with every checkpoint (LoopState.method)."""

    NAME: str = ""
    USES_LLM: bool = False
    # The program family the method's runs compile, beyond the agent they share. PAPER_LOOP: its runs differ from
    # the paper loop's only in data (the rows of `bank_and_rows`, as the base class builds them; no level sampler, no
    # rows drawn on the device, no hook that changes the TrainState), so a fused study trains it on one agent axis
    # with the other methods of that family (`study.groups`). None: a program of its own.
    PROGRAM: str | None = None
    WHERE: str | None = None  # the `where` of the training phases whose rows the method chooses, if any
    # The method's own settings, `method_options.<NAME>` in a run configuration: a frozen `schema.Declared`
    # dataclass whose fields declare their defaults, bounds and choices (as a game declares its options), or None.
    OPTIONS: type | None = None

    @classmethod
    def options(cls, cfg):
        """This method's settings in run configuration `cfg` (`method_options.<NAME>`)."""
        return getattr(cfg.method_options, cls.NAME)

    # ---------------------------------------------------------------------------------------- class level
    # The phases of cycle c (design, train, ...), before the cycle's evaluation: by default the paper's cycle.
    cycle_phases = staticmethod(llm_cycle)

    @classmethod
    def design(cls, ctx: DesignContext) -> list | dict:
        """The design step of one cycle: per designer {"configs": [...], "purposes": [...]}, or a whole design
        record (e.g. `fixed` reusing cycle 1's)."""
        raise AssertionError(f"{cls.NAME} has no design step")

    @classmethod
    def llm_calls(cls, cycle: int, num_designers: int) -> int:
        """LLM requests of cycle `cycle`'s design step (repair turns not counted)."""
        return num_designers if cls.USES_LLM else 0

    @staticmethod
    def bank_rows(cfg) -> int:
        """Rows of the environment bank: row 0 the original game, then every designer's LLM configurations."""
        return 1 + cfg.schedule.envs_per_call * cfg.num_designers

    @staticmethod
    def bank_use(cfg) -> str | None:
        """The dry run's line on what the bank's rows hold (None: the plan says it from the phases)."""
        return None

    @staticmethod
    def level_sampler(cfg):
        """The trainer's on-device row sampler (`trainer.level_sampler.LevelSampler`), or None."""
        return None

    @classmethod
    def sampled_rows(cls, cfg, where: str) -> int | None:
        """For a training phase at `where` whose rows the method draws on the device: how many designed rows it
        draws from (the dry run's count); None for the loop's fixed rows."""
        return None

    @staticmethod
    def config_problems(cfg) -> list[str]:
        """What is wrong with the run configuration for this method (RunConfig's checks)."""
        return []

    # ---------------------------------------------------------------------------------------- one run
    def __init__(self, run: RunView, trainer):
        self.run, self.trainer = run, trainer

    def state_dict(self) -> dict:
        """The method's own host state, as JSON (saved with every checkpoint)."""
        return {}

    def load_state(self, state: dict) -> None:
        """Take back a `state_dict()` (keys missing from older checkpoints keep their defaults)."""

    def bank_and_rows(self, where: str):
        """(bank, rows) of a training phase at `where`. Bank: row 0 the original game, then the LLM configurations,
        padded to a fixed capacity (no recompiles); rows: `assign_rows`, or a `RowSampler`, or `layouts.REPLAY`
        for the trainer's level sampler."""
        run, cfg = self.run, self.run.cfg
        llm = run.llm_configs() if where in ("llm", "mixed") else []
        bank = run.make_params([run.config_cls.original(), *llm], capacity=cfg.bank_rows)
        s = cfg.schedule
        rows = assign_rows(where, cfg.ppo.num_envs, cfg.num_agents, cfg.num_designers, s.envs_per_call,
                           s.original_share, bool(llm))
        return bank, rows

    def before_phase(self, ts, phase: Phase) -> None:
        """A training phase starts (before its bank is built and its envs reset)."""

    def before_chunk(self, ts, phase: Phase, bank, rows):
        """Before each compiled chunk: (ts, bank, rows) to train it with."""
        return ts, bank, rows

    def chunk_record(self, ts, phase: Phase) -> dict:
        """Extra entries of the chunk's line in metrics.jsonl."""
        return {}

    def after_chunk(self, ts, phase: Phase, bank):
        """After each chunk is recorded: (ts, bank) for the next one."""
        return ts, bank

    def after_phase(self, ts, phase: Phase) -> None:
        """A training phase ended (or was already done when a run resumed)."""

    @classmethod
    def report_entries(cls, state: dict) -> dict:
        """Entries of the run's report.json from the method's saved state (`state_dict()`), e.g. sfl's selections."""
        return {}

    def designer_notes(self) -> list | None:
        """Per designer, notes on its previous environments for the next design step (DesignContext), or None."""
        return None
