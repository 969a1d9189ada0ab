"""`envgen-jax study`: does EnvGen help? Every method trained with the same agent, steps and seeds, then compared.

    envgen-jax study --config configs/study_cpu.yaml --methods ppo,envgen,fixed,random,easy_to_hard,adversarial \\
        --seeds 4 --out runs/study_cpu

OUT holds one ordinary run directory per method (`OUT/<method>/`, as `envgen-jax train` writes it, the seeds vmapped
inside the run); only `method` differs between their configurations. `OUT/study.yaml` keeps the study's resolved
settings, so the same command continues a killed or interrupted study: finished runs (report.json) are reused
(also one trained elsewhere whose other settings cannot change what it learnt: `runner.what_trains`), started ones
resume from their newest checkpoint, the rest start. A method that fails is reported and the next one
runs; the same command retries it.

The comparison (study.json, study.md and study_*.png) is built from the run directories' files alone (report.json,
metrics.jsonl, sessions.jsonl), never from live run objects, and is rewritten after every method, so it can be read
while a long study runs.

Statistics, per method over its seeds: mean, population std (np.std, as report.json and the paper's feedback), and a
95% percentile-bootstrap confidence interval of the mean; against `ppo`, the difference of means with a 95%
percentile-bootstrap interval (each method's seeds resampled independently: the runs are not paired) and Welch's
two-sided t-test. Where a statistic cannot be computed (one seed, or no spread at all) it is None with the reason.

The package, one module per concern: `settings` (what a study runs, study.yaml, what a rerun may change), `groups`
(which methods train as one program: `--grouping fused`, and the dry run), `runner` (the groups in turn, then the
comparison), `compare` (study.json's content from the run directories), `stats` (the
statistics above), `markdown` (study.md) and `plots` (study_*.png). The names below are the package's interface.
"""

from envgen_jax.study.compare import (LONG_CHAIN, adaptation_summary, build_comparison, final_versus_reference,
                                      llm_tokens, method_summary, read_lines, stale_restarts)
from envgen_jax.study.markdown import markdown
from envgen_jax.study.plots import plot_study
from envgen_jax.study.runner import log_traceback, run_method, run_study, write_comparison
from envgen_jax.study.settings import StudySettings, load_settings, reconcile, resolve, save_settings
from envgen_jax.study.stats import (CONFIDENCE, REFERENCE, RESAMPLES, RNG_SEED, SECOND_REFERENCE, STATISTICS,
                                    difference, holm, mean_ci, pairwise, superiority, with_holm)

__all__ = [
    "CONFIDENCE", "LONG_CHAIN", "REFERENCE", "RESAMPLES", "RNG_SEED", "SECOND_REFERENCE", "STATISTICS",
    "StudySettings", "adaptation_summary", "build_comparison", "difference", "final_versus_reference", "holm",
    "llm_tokens", "load_settings", "log_traceback", "markdown", "mean_ci", "method_summary", "pairwise",
    "plot_study", "read_lines", "reconcile", "resolve", "run_method", "run_study", "save_settings",
    "stale_restarts", "superiority", "with_holm", "write_comparison",
]
