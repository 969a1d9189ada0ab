"""The study's statistics over seeds: mean, std and a bootstrap interval per method, the difference between two
methods with its interval and Welch's t-test, Holm's adjustment of a family of p-values, and the probability that a
seed of one method beats a seed of another."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from scipy.stats import bootstrap, ttest_ind

REFERENCE = "ppo"          # the baseline every other method is compared with (the paper's "0.96M PT in Crafter")
CONFIDENCE = 0.95
RESAMPLES = 9999           # scipy's default
RNG_SEED = 0               # fixed, so the intervals are the same every time the comparison is rebuilt
STATISTICS = {
    "std": "population std over seeds (np.std, ddof 0), as in report.json",
    "ci": f"{CONFIDENCE:.0%} percentile bootstrap of the mean over seeds (scipy.stats.bootstrap, method='percentile', "
          f"{RESAMPLES} resamples, rng numpy.random.default_rng({RNG_SEED})); with few seeds it is too narrow (the "
          f"bootstrap undercovers at small n): read it with the t-test",
    "difference": f"mean(method) - mean({REFERENCE}); its {CONFIDENCE:.0%} interval is a percentile bootstrap that "
                  f"resamples each method's seeds independently (the runs are not paired)",
    "test": "Welch's two-sided t-test (scipy.stats.ttest_ind, equal_var=False) of the per-seed values",
    "pairwise": "every pair of finished methods: Welch's p adjusted by Holm's step-down method over all pairs (one "
                "family per metric), and P(a seed of A beats a seed of B), ties counted half",
    "final_evaluation": f"each method's final evaluation in the original game (after all training) against "
                        f"{REFERENCE}'s: difference, interval and Welch's p as above, adjusted by Holm over the "
                        f"family of every method against {REFERENCE}",
}
SECOND_REFERENCE = "envgen"  # each method is also compared with EnvGen


def _values(values: Sequence[float | None]) -> np.ndarray:
    """Per-seed values as floats, leaving out seeds without one (None/NaN: no finished scored episode)."""
    x = np.array([np.nan if v is None else v for v in values], np.float64)
    return x[~np.isnan(x)]


def _bootstrap(samples: tuple, statistic: Callable) -> list[float]:
    res = bootstrap(samples, statistic, n_resamples=RESAMPLES, confidence_level=CONFIDENCE, method="percentile",
                    rng=np.random.default_rng(RNG_SEED))
    return [float(res.confidence_interval.low), float(res.confidence_interval.high)]


def mean_ci(values: Sequence[float | None]) -> dict:
    """Mean, population std and the 95% bootstrap interval of the mean over seeds, with every seed's value."""
    x = _values(values)
    out = {"per_seed": list(values), "n": int(x.size), "mean": float(x.mean()) if x.size else None,
           "std": float(x.std()) if x.size else None, "ci95": None, "ci_note": None}
    if x.size < 2:
        out["ci_note"] = f"{x.size} seed(s) with a value: an interval needs 2 or more"
    elif np.all(x == x[0]):
        out["ci_note"] = "every seed has the same value: there is no spread to resample"
    else:
        out["ci95"] = _bootstrap((x,), np.mean)
    return out


def difference(values: Sequence[float | None], reference: Sequence[float | None]) -> dict:
    """mean(values) - mean(reference), its 95% bootstrap interval, and Welch's t-test (two-sided)."""
    x, r = _values(values), _values(reference)
    out = {"difference": float(x.mean() - r.mean()) if x.size and r.size else None, "ci95": None, "t": None,
           "df": None, "p_value": None, "note": None}
    if x.size < 2 or r.size < 2:
        out["note"] = f"{x.size} and {r.size} seeds with a value: the interval and the test need 2 or more each"
    elif np.all(x == x[0]) and np.all(r == r[0]):
        out["note"] = "every seed of both methods has the same value: no spread, so no interval or test"
    else:
        out["ci95"] = _bootstrap((x, r), lambda a, b, axis: a.mean(axis) - b.mean(axis))
        test = ttest_ind(x, r, equal_var=False)
        out.update(t=float(test.statistic), df=float(test.df), p_value=float(test.pvalue))
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (None: no test, left out of the family)."""
    known = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(known):
        running = max(running, min(1.0, (len(known) - rank) * p))
        out[i] = running
    return out


def superiority(values: Sequence[float | None], other: Sequence[float | None]) -> float | None:
    """The probability that a seed of one method beats a seed of the other (ties count half): the share of all
    seed pairs, i.e. the common-language effect size, Mann-Whitney U / (n m)."""
    x, y = _values(values), _values(other)
    if not x.size or not y.size:
        return None
    return float(((x[:, None] > y[None, :]).sum() + 0.5 * (x[:, None] == y[None, :]).sum()) / (x.size * y.size))


def with_holm(rows: list[dict]) -> list[dict]:
    """The rows, each given `p_holm`: the rows' `p_value`s adjusted by Holm as one family."""
    for row, adjusted in zip(rows, holm([r["p_value"] for r in rows])):
        row["p_holm"] = adjusted
    return rows


def pairwise(per_seed: dict[str, Sequence[float | None]]) -> list[dict]:
    """Every pair of methods: the difference of means with its interval and Welch's p, the p-value adjusted by
    Holm over all pairs, and the probability that a seed of the first beats a seed of the second."""
    names = list(per_seed)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    return with_holm([{"a": a, "b": b, **difference(per_seed[a], per_seed[b]),
                       "p_superior": superiority(per_seed[a], per_seed[b])} for a, b in pairs])

