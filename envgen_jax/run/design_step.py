"""A cycle's design step as the loop runs it: the method's `design` with its context (the feedback from the last
evaluation, the previous designs, the LLM designers, the method's notes), the LLM bookkeeping in the loop state, and
the cycle's environments written to `environments/`."""

from __future__ import annotations

import json

from envgen_jax.llm.reply import environment_entry
from envgen_jax.methods.base import DesignContext, Method
from envgen_jax.methods.learning import environment_learning
from envgen_jax.methods.view import RunView
from envgen_jax.trainer.metrics import nan_to_zero


class DesignStep:
    """`step(cycle)` runs one design step; the LLM designers are made on first use (from the loop state's when a
    run resumes) and closed by `close()`. llm_client: a client for the designers (tests script one)."""

    def __init__(self, run: RunView, method: Method, log, llm_client=None):
        self.run, self.method, self.log = run, method, log
        self._llm_client = llm_client
        self._designers: list | None = None

    def __call__(self, cycle: int) -> None:
        run, state, cfg = self.run, self.run.state, self.run.cfg

        def on_llm_call(seconds: float, n: int) -> None:
            state.llm_calls += 1
            state.llm_seconds += seconds
            self.log.info(f"LLM step {state.llm_calls}: {n} environments in {seconds:.1f}s")
            state.designers = [d.state_dict() for d in self._designers]

        ctx = DesignContext(cfg=cfg, cycle=cycle, cycles=cfg.schedule.cycles, n=cfg.schedule.envs_per_call,
                            num_designers=cfg.num_designers, feedback=self.feedback(cycle), previous=state.designs,
                            config_cls=run.config_cls, designers=self.designers, on_llm_call=on_llm_call,
                            status=run.status, learnability_notes=self.method.designer_notes(),
                            inside=self.inside(cycle))
        result = self.method.design(ctx)
        if isinstance(result, dict):  # a whole record (e.g. fixed reusing cycle 1's): nothing new to write
            state.designs.append(result)
            return
        record = {"cycle": cycle, "designers": result}
        state.designs.append(record)
        self.write(record)

    def feedback(self, cycle: int) -> list | None:
        """Success rates (percent, mean and std over seeds) from the previous cycle's evaluation."""
        state = self.run.state
        if cycle == 0 or not state.evals:
            return None
        last = state.evals[-1]
        names = self.run.env.achievement_names
        if self.run.cfg.num_designers == 1:
            return [{a: (100 * nan_to_zero(last.success_mean[a]), 100 * nan_to_zero(last.success_std[a]))
                     for a in names}]
        return [{a: (100 * nan_to_zero(per_seed[j]), 0.0) for j, a in enumerate(names)}
                for per_seed in last.success_per_seed]

    def inside(self, cycle: int) -> list | None:
        """Per designer, per environment of the previous cycle's design: the agent's success (%) per achievement
        inside it, from that cycle's training episodes (`methods.learning`, as the report shows it); None if not
        measured."""
        if cycle == 0:
            return None
        entry = next((e for e in environment_learning(self.run.state, self.run.env.achievement_names)
                      if e["cycle"] == cycle - 1), None)
        if entry is None:
            return None
        envs = [env["success"] for env in entry["environments"]]
        num_designers = self.run.cfg.num_designers
        per = len(envs) // num_designers
        return [envs[d * per:(d + 1) * per] for d in range(num_designers)]

    def designers(self) -> list:
        if self._designers is None:
            from envgen_jax.llm.designer import Designer
            run = self.run
            transcript = run.out / "llm_transcript.jsonl"
            spec = run.game.designer_spec(run.env)
            if run.state.designers:
                self._designers = [Designer.from_state(s, run.cfg.llm, transcript, env=spec, client=self._llm_client)
                                   for s in run.state.designers]
            else:
                self._designers = [Designer(spec, run.cfg.llm, transcript, client=self._llm_client)
                                   for _ in range(run.cfg.num_designers)]
        return self._designers

    def write(self, record: dict) -> None:
        """environments/cycle_<c>.json (and .png): the cycle's environments, with their purposes and, where the
        designer wrote them (llm.targets), the achievements each says it trains."""
        cycle, run = record["cycle"], self.run
        folder = run.out / "environments"
        folder.mkdir(exist_ok=True)
        environments = []
        for d in record["designers"]:
            targets = list(d.get("targets") or []) + [()] * len(d["configs"])  # none for some: no key
            environments += [environment_entry(p, c, t) for t, p, c in zip(targets, d["purposes"], d["configs"])]
        (folder / f"cycle_{cycle + 1}.json").write_text(json.dumps({"environments": environments}, indent=2))
        if run.cfg.output.pictures:
            run.render(run.llm_configs(record)[: run.cfg.schedule.envs_per_call], folder / f"cycle_{cycle + 1}.png")

    def close(self) -> None:
        for d in self._designers or []:
            d.close()
