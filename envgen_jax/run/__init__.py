"""One run of a method, on the host: the loop around the compiled training chunks (`envgen_jax.trainer`).

  loop.py         EnvGenRun: walks the plan (design, train, evaluate), checkpoints, resumes, writes the report; one
                  run, or several methods' runs fused on one agent axis (a study's `--grouping fused`)
  member.py       Member: one method's run inside the driver (plan, state, records, checkpoints, its agents' slice)
  failures.py     MemberFailures: in a fused run, a method's error fails that method only
  parts.py        RunParts: the game, its env, the method's class (looked up once per run) and the trainer
  plan.py         the plan of a run: phases from the config and the method, and the plan in numbers (pure)
  loop_state.py   LoopState: what the host needs to continue a run (JSON, saved with every checkpoint); Evaluation
  design_step.py  DesignStep: a cycle's design step (the method's `design`, the LLM bookkeeping)
  progress.py     the progress bar (tqdm)
  log.py          RunLog: metrics.jsonl and TensorBoard scalars; the console log
  provenance.py   where a result came from (commit, versions, device)
  compile_record.py  every program XLA compiles or loads, and the seconds per phase of a run
  compile_cache.py   JAX's persistent compilation cache for `train` and `study`
  distributed.py  one run over several processes (hosts) through `jax.distributed`; process 0 writes the files
  supervise.py    the parent that watches each of those processes: a process JAX's runtime ends gets one line

What a method sees of a run (`methods.view.RunView`) and the bank's row layout (`methods.rows`) belong to the
method contract, in `envgen_jax.methods`: a run imports the methods, never the other way round. Import the modules
themselves (`from envgen_jax.run.loop import EnvGenRun`): this file imports nothing.
"""
