"""The pure parts of a run: the plan, the methods behind their registry, and which bank row each slot runs."""

import numpy as np
import pytest

from envgen_jax import methods
from envgen_jax.run.plan import build_plan, first_training_where, phase_label, train_updates
from envgen_jax.methods.rows import assign_rows
from envgen_jax.run_config import METHODS, load_run_config
from tests.golden import TINY


def test_every_method_is_a_module_with_the_method_interface():
    assert set(METHODS) == {"envgen", "ppo", "fixed", "easy_to_hard", "adversarial", "random", "plr", "sfl",
                            "envgen_sfl", "scripted"}
    for name in METHODS:
        module = methods.get(name)
        assert module.NAME == name and isinstance(module.USES_LLM, bool)
        assert callable(module.cycle_phases) and callable(module.design)
    assert [m for m in METHODS if methods.uses_llm(m)] == ["envgen", "fixed", "easy_to_hard", "adversarial",
                                                           "envgen_sfl"]
    with pytest.raises(KeyError, match="is not one of"):
        methods.get("magic")


def test_plan_helpers():
    cfg = load_run_config(None, TINY)
    plan = build_plan(cfg, methods.get(cfg.method))
    assert train_updates(plan) * cfg.steps_per_update == 2 * (256 + 256) + 512
    assert train_updates(plan, "final") * cfg.steps_per_update == 512
    assert first_training_where(plan, 0) == "llm" and first_training_where(plan, len(plan)) == "original"
    assert phase_label(plan[0], 2) == "cycle 1/2 LLM step" and phase_label(plan[-1], 2) == "final evaluate"


def test_random_design_is_the_same_for_the_same_seed_and_cycle():
    from envgen_jax.envs.crafter import CrafterConfig
    from envgen_jax.methods.base import DesignContext
    cfg = load_run_config(None, TINY + ["method=random"])

    def design(cycle):
        ctx = DesignContext(cfg=cfg, cycle=cycle, cycles=2, n=2, num_designers=2, feedback=None, previous=[],
                            config_cls=CrafterConfig, designers=lambda: [], on_llm_call=lambda s, n: None)
        return methods.get("random").design(ctx)

    assert design(0) == design(0) != design(1)
    assert len(design(0)) == 2 and all(len(d["configs"]) == 2 for d in design(0))


def test_fixed_reuses_the_first_design_as_a_whole_record():
    from envgen_jax.methods.base import DesignContext
    first = {"cycle": 0, "designers": [{"configs": [{}], "purposes": ["p"]}]}
    ctx = DesignContext(cfg=None, cycle=1, cycles=2, n=1, num_designers=1, feedback=None, previous=[first],
                        config_cls=None, designers=lambda: [], on_llm_call=lambda s, n: None)
    assert methods.get("fixed").design(ctx) == dict(first, cycle=1, reused=True)


def test_row_assignment():
    assert (assign_rows("original", 8, 2, 1, 2, 0.5, True) == 0).all()
    assert (assign_rows("llm", 8, 2, 1, 2, 0.5, False) == 0).all()  # no LLM configuration yet
    assert assign_rows("llm", 6, 2, 1, 3, 0.5, True).tolist() == [1, 2, 3, 1, 2, 3]
    assert assign_rows("mixed", 8, 2, 1, 2, 0.5, True).tolist() == [0, 0, 0, 0, 1, 2, 1, 2]
    # A designer per seed: seed s runs its own designer's rows 1 + 2s and 2 + 2s.
    rows = assign_rows("mixed", 8, 2, 2, 2, 0.5, True)
    assert rows.shape == (2, 8) and (rows[:, :4] == 0).all()
    assert set(rows[0, 4:]) == {1, 2} and set(rows[1, 4:]) == {3, 4} and rows.dtype == np.int32
    # ... and rows per seed in the original game too (one chunk program for every phase of the run)
    for where, has_llm in (("original", True), ("final", True), ("llm", False)):
        rows = assign_rows(where, 8, 3, 3, 2, 0.5, has_llm)
        assert rows.shape == (3, 8) and (rows == 0).all() and rows.dtype == np.int32


def test_parameter_count_is_the_networks_for_every_method():
    """The count printed before every run and by --dry-run: the same network whether or not the method's trainer
    carries a level sampler's state beside the agent's (plr once failed here: its state has no `params`)."""
    from envgen_jax.run.parts import RunParts, parameter_count
    from envgen_jax.run_config import load_run_config

    counts = {name: parameter_count(RunParts.of(load_run_config(f"configs/{name}.yaml")))
              for name in ("crafter_ppo", "crafter_plr", "crafter_sfl", "crafter_envgen")}
    assert set(counts.values()) == {827_410}, counts  # 2 x 256 actor and critic MLPs on the 1345-d observation
    seeds = load_run_config("configs/crafter_ppo.yaml", ["seeds=3"])
    assert parameter_count(RunParts.of(seeds)) == 827_410  # per agent, not per vmapped seed stack
