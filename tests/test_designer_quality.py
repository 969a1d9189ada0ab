"""benchmarks/designer_quality.py end to end over a scripted client (no LLM): the aggregates equal the numbers
worked out by hand from the scripted replies, outputs are well formed, and --resume makes no call twice."""

import dataclasses
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import designer_quality as dq  # noqa: E402
from envgen_jax.llm.testing import ScriptedClient  # noqa: E402

EXAMPLE = dq.EXAMPLES["crafter"]


def reply(*envs):
    return json.dumps({"analysis": "scripted", "environments": [{"purpose": p, "config": c} for p, c in envs]})


SWORDLESS = ("Fight zombies with a sword", {"creature_settings": {"zombies": "very common"}})
FIRST_CYCLE_0 = reply(                                     # valid at once; copies 1/4; consistent T, F, T, unknown
    (EXAMPLE["purpose"], EXAMPLE["config"]), SWORDLESS,
    ("Fight zombies with a sword", {"creature_settings": {"zombies": "very common"},
                                    "inventory_settings": {"wood_sword": 1}}),
    ("Practise the basics.", {"episode_settings": {"day_length": 100}}))
FIRST_CYCLE_1 = reply(                                     # after one repair; copies 2/4, distinct 3/4; T, F, T, T
    (EXAMPLE["purpose"], EXAMPLE["config"]), ("Many zombies to fight.", EXAMPLE["config"]),
    ("Drink water at the beaches.", {"environment_settings": {"target_biome": "beaches"}}),
    ("Place stone.", {"inventory_settings": {"stone": 5}}))
# Targets 2/4 (more iron + a stone pickaxe; an iron pickaxe), repeats 1/4 of the earlier design; consistent T, F, T, T.
IRON_0 = reply(
    ("Mine iron with a stone pickaxe.", {"environment_settings": {"iron_rarity": "very common"},
                                         "inventory_settings": {"stone_pickaxe": 1}}),
    ("Mine iron.", dq.PREVIOUS["crafter"][3][1]),
    ("Less iron to search for.", {"environment_settings": {"iron_rarity": "rare"}}),
    ("Collect diamonds with an iron pickaxe.", {"inventory_settings": {"iron_pickaxe": 1}}))
SCRIPT = [FIRST_CYCLE_0, "no JSON here", FIRST_CYCLE_1, IRON_0, "still no JSON", "none again"]
ARGS = ["--base-url", "http://scripted.invalid/v1", "--model", "fake", "--env", "crafter",
        "--profiles", "first_cycle,weak_iron_diamond", "--repeats", "2", "--max-repairs", "1", "--temperature", "0.5",
        "--variants", "basic_advice"]  # only duplicates go back for repair: the script below is one reply per turn


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("dq") / "dq.json"
    client = ScriptedClient(SCRIPT)
    return dq.main([*ARGS, "--out", str(out)], client=client), client, out


def test_aggregates_match_the_scripted_replies(run):
    outcome, client, _ = run
    (row,) = outcome["result"]["aggregates"]["by_env"]
    assert (row["model"], row["variant"], row["env"]) == ("fake", "basic_advice", "crafter")
    assert row["calls"] == 4 and row["failures"] == 1 and row["configs"] == 12
    assert row["first_try_valid"] == {"share": 0.5, "hits": 2, "of": 4}
    assert row["repairs_per_call"] == 0.5                  # (0 + 1 + 0 + 1) / 4
    assert row["copying"] == {"share": 0.25, "hits": 3, "of": 12}
    assert row["diversity"] == pytest.approx((1 + 0.75 + 1) / 3)
    assert row["targeting"] == {"share": 0.5, "hits": 2, "of": 4}   # the first cycle has no weak skill to target
    assert row["consistency"] == {"share": 8 / 11, "hits": 8, "of": 11}
    assert row["prompt_tokens"] == 150 and row["completion_tokens"] == 75  # the scripted 100 / 50 per reply
    by_profile = {r["profile"]: r for r in outcome["result"]["aggregates"]["by_profile"]}
    assert by_profile["first_cycle"]["targeting"]["share"] is None
    iron = by_profile["weak_iron_diamond"]
    assert iron["targeting"]["share"] == 0.5 and iron["failures"] == 1 and iron["repeats_previous"]["hits"] == 1
    assert len(client.calls) == len(SCRIPT)


def test_calls_are_fresh_designers_with_seeds_and_the_earlier_turn(run):
    outcome, client, _ = run
    calls = outcome["result"]["calls"]
    assert [(c["profile"], c["repeat"], c["ok"], c["replies"]) for c in calls] == [
        ("first_cycle", 0, True, 1), ("first_cycle", 1, True, 2),
        ("weak_iron_diamond", 0, True, 1), ("weak_iron_diamond", 1, False, 2)]
    assert calls[3]["error"].startswith("DesignError") and calls[3]["configs"] is None
    # Each request's seed: the repeat + 1000 x the designer's earlier requests + the try (feedback calls follow one).
    assert [k["seed"] for k in client.calls] == [0, 1, 2, 1000, 1001, 1002] and client.calls[0]["temperature"] == 0.5
    assert [m["role"] for m in client.calls[0]["messages"]] == ["user"]
    feedback = client.calls[3]["messages"]
    assert [m["role"] for m in feedback] == ["user", "assistant", "user"]
    assert json.loads(feedback[1]["content"])["environments"][1]["config"] == dq.PREVIOUS["crafter"][1][1]
    assert "collect_iron: 0%" in feedback[2]["content"] and "collect_wood: 90%" in feedback[2]["content"]
    assert calls[2]["helped_settings"][0] == ["environment_settings.iron_rarity", "inventory_settings.stone_pickaxe"]
    assert calls[0]["analysis"] == "scripted" and calls[0]["replies_text"] == [FIRST_CYCLE_0]


def test_outputs_are_written(run):
    outcome, _, out = run
    data = json.loads(out.read_text())
    assert data["benchmark"] == "designer_quality" and data["settings"]["temperature"] == 0.5
    for key in ("commit", "dirty", "python", "cpu", "llm_runs_on"):
        assert key in data["environment"], key
    assert data["profiles"]["crafter"]["weak_iron_diamond"]["success"]["collect_iron"] == [0.0, 0.5]
    assert out.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = out.with_suffix(".md").read_text()
    assert table == dq.markdown(outcome["result"])
    # Lift +0: the earlier design also targets iron 2/4; specificity 3/5: iron_rarity and stone_pickaxe (served),
    # sapling (not), less iron (not), iron_pickaxe (diamond).
    # The lowest profile is the only one here; duplicates per call 1/3 (the example twice in first cycle #1, of 3
    # answered calls), repeats per call 1 (the one feedback call answered), no re-ask (llm.distinct off: measured
    # before it).
    assert ("| fake | basic_advice | crafter | 4 | 50% (2/4) | 0.50 | 1 | 50% (2/4) | 50% (2/4) weak_iron_diamond | "
            "+0 | 60% (3/5) | 25% (3/12) | 25% (1/4) | 0.92 | 0.33 | 1.00 | 0.00 | 73% (8/11) |") in table
    # Sending the earlier design back would target iron 2/4: wood for the iron tools, a mountain rich in coal.
    assert "| (the earlier design sent back) | | 50% | 50% | 50% |" in table
    assert "| fake | basic_advice | 50% (2/4) | 50% (2/4) | 50% (2/4) crafter weak_iron_diamond |" in table
    assert '"tree_rarity": "very common"' not in data["prompts"]["crafter/first_cycle/basic_advice"]


def test_resume_makes_only_the_missing_calls(run, tmp_path):
    _, _, out = run
    copy = tmp_path / "dq.json"
    copy.write_text(out.read_text())
    client = ScriptedClient([IRON_0, IRON_0])
    outcome = dq.main([*ARGS, "--out", str(copy), "--resume", "--repeats", "3",
                       "--profiles", "weak_iron_diamond"], client=client)
    assert len(client.calls) == 1  # only weak_iron_diamond #2: the other five calls are kept, the failure too
    (row,) = outcome["result"]["aggregates"]["by_env"]
    assert row["calls"] == 5 and row["targeting"]["hits"] == 4 and row["repeats_previous"]["hits"] == 2
    assert all(c["code"]["commit"] is not None for c in outcome["result"]["calls"])  # each call's own code
    # Resumed again with nothing left: no call, and the file still says when its last measurement was made.
    data = json.loads(copy.read_text())
    data["environment"]["date"] = "2000-01-01T00:00:00Z"
    copy.write_text(json.dumps(data))
    idle = ScriptedClient([])
    again = dq.main([*ARGS, "--out", str(copy), "--resume", "--repeats", "3",
                     "--profiles", "weak_iron_diamond"], client=idle)
    assert idle.calls == [] and again["result"]["environment"]["date"] == "2000-01-01T00:00:00Z"
    assert json.loads(copy.read_text())["environment"]["date"] == "2000-01-01T00:00:00Z"
    assert again["result"]["calls"] == outcome["result"]["calls"]
    with pytest.raises(SystemExit, match="other settings"):
        dq.main([*ARGS, "--out", str(copy), "--resume", "--temperature", "0"], client=client)


def test_an_offline_model_with_every_call_made_starts_no_server(monkeypatch):
    import envgen_jax.llm.local_server as local_server

    def no_server(*_, **__):
        raise AssertionError("a server was started with nothing left to ask")

    monkeypatch.setattr(local_server, "LocalServer", no_server)
    model = "qwen2.5-coder-1.5b"
    args = dq.parse_args(["--models", model, "--env", "crafter", "--profiles", "first_cycle,weak_combat",
                          "--variants", "v3,v2_greedy", "--repeats", "2"])
    plan = dq.make_plan(args)
    # v3 samples: two requests a profile; v2_greedy is greedy: one says all.
    keys = {(model, v, "crafter", p, r) for p in ("first_cycle", "weak_combat")
            for v, repeats in (("v3", 2), ("v2_greedy", 1)) for r in range(repeats)}
    settings = dq.llm_settings(args, model=model)
    assert dq.calls_left(model, settings, plan, keys) == 0
    assert dq.calls_left(model, settings, plan, keys - {(model, "v3", "crafter", "weak_combat", 1)}) == 1
    dq.run_offline(model, args, plan, keys, Path("unused"), None, {}, {})  # returns before any server


def test_with_example_variant_shows_the_old_example_and_current_does_not(tmp_path):
    for env in ("crafter", "heist"):
        spec = dq.base_spec(env)
        shown = dq.with_example(spec, tmp_path / env)
        example = json.dumps(dq.EXAMPLES[env])
        for profile in dq.PROFILES[env]:
            assert example in dq.prompt_text(shown, env, profile, 4)
            assert example not in dq.prompt_text(spec, env, profile, 4)
        assert shown.check is not None or env == "crafter"  # Heist keeps its maze-fits-the-world check


def test_profiles_cover_every_achievement_and_weak_ones_are_near_zero():
    for env, profiles in dq.PROFILES.items():
        names = dq.base_spec(env).achievements
        # A plausible trained agent, clearly above the weak skills (<= 2 %): 40-90 %, 30 % for full Craftax's floors
        # below the dungeon, which a 1M-step agent rarely reaches.
        assert set(dq.BASE_RATES[env]) == set(names) and all(30 <= r <= 90 for r in dq.BASE_RATES[env].values())
        for profile in profiles.values():
            rates = dq.success_rates(env, profile)
            assert set(rates) == set(names) and set(profile.weak) <= set(names)
            assert all((rates[n][0] <= 2) == (n in profile.weak) for n in names)
        cls = dq.base_spec(env).config_cls
        assert cls.from_dict(dq.EXAMPLES[env]["config"]) not in [cls.from_dict(c) for _, c in dq.PREVIOUS[env]]
        # Sending the earlier design back must leave a designer room to do better on every profile.
        assert all(dq.baseline_targeting(env, p) <= 0.5 for p in profiles.values() if not p.first_cycle)


def test_aim_is_judged_for_the_1_5b_model_only():
    rows = [{"model": "qwen2.5-coder-1.5b", "variant": "current", "targeting": {"share": 0.75}, "copying": {"hits": 0}},
            {"model": "qwen2.5-coder-1.5b", "variant": "with_example", "targeting": {"share": 0.5},
             "copying": {"hits": 2}},
            {"model": "smollm2-135m", "variant": "current", "targeting": {"share": 0.1}, "copying": {"hits": 9}}]
    assert [(a["variant"], a["targeting_met"], a["copies_met"]) for a in dq.aims(rows)] == [
        ("current", True, True), ("with_example", False, False)]


def test_v2_variants_keep_their_meaning_when_the_defaults_change():
    """A variant names what was measured: v2's settings are pinned, so a later LLMSettings default (say, needs off)
    cannot change what a resumed row means."""
    from envgen_jax.llm.settings import LLMSettings
    other = LLMSettings.of(needs=False, targets=False, history="json", only_changes=False, analysis="first_reply",
                           advice="none")
    v2 = dq.VARIANTS["v2"].settings(other)
    s = v2.strategy
    assert (s.targets, s.needs, s.history, s.only_changes, s.analysis, s.envs_per_reply, s.advice) == \
        (True, True, "summary", True, "each_reply", 1, "all")
    once = dq.VARIANTS["v2_analysis_once"].settings(LLMSettings())
    s = once.strategy
    assert (s.needs, s.analysis, s.targets, s.advice) == (True, "first_reply", True, "all")
    no_advice = dq.VARIANTS["v2_no_advice"].settings(LLMSettings())
    assert no_advice.replace(advice="all") == v2  # v2 in every other setting


def test_v3_is_the_designer_the_bundled_configs_run():
    """v3 is measured as the aims' "designer as it runs by default": every design setting of the bundled Crafter and
    Heist configs (the LLMSettings defaults the verdicts left, plus what the configs set), pinned."""
    from envgen_jax.llm.settings import LLMSettings
    from envgen_jax.run_config import load_run_config
    fields = ("targets", "needs", "history", "only_changes", "analysis", "conversation", "envs_per_reply", "advice",
              "repair_temperature", "temperature", "max_repairs", "max_tokens")
    v3 = dq.VARIANTS["v3"].settings(dq.llm_settings(dq.parse_args(["--models", "qwen2.5-coder-1.5b"])))
    now = dq.VARIANTS["v3_focus_levers"].settings(dq.llm_settings(dq.parse_args(["--models", "qwen2.5-coder-1.5b"])))
    assert (now.unserved, now.lagging) == ("accept", False)  # no idea measured and not adopted
    v3, now = v3.flat(), now.flat()
    for name in ("crafter_envgen.yaml", "heist_envgen.yaml"):
        bundled = load_run_config(ROOT / "configs" / name).llm.flat()
        assert {f: v3[f] for f in fields} == {f: bundled[f] for f in fields}, name
        # since issue 45 the bundled designer has the guard, the weakest skills' needs, one weak skill per
        # environment and the settings that make each easier (each adopted by its rule): v3_focus_levers, which
        # is also LLMSettings' own strategy
        issue_45 = (*fields, "distinct", "weak_needs", "weak_levers", "focus")
        assert {f: now[f] for f in issue_45} == {f: bundled[f] for f in issue_45}, name
        assert LLMSettings().strategy == load_run_config(ROOT / "configs" / name).llm.strategy, name
    flipped = dq.VARIANTS["v3"].settings(LLMSettings.of(targets=True, advice="all", history="summary"))
    s = flipped.strategy
    assert (s.targets, s.advice, s.history) == (False, "none", "json")  # pinned


def test_variants_are_paired_with_v2_request_by_request():
    """The paired comparison: only requests both variants answered, the difference of their per-request shares, and
    a p-value that a difference of one request in two cannot make small."""
    def call(variant, profile, repeat, targeting, tokens, ok=True):
        return {"model": "m", "variant": variant, "env": "crafter", "profile": profile, "repeat": repeat, "ok": ok,
                "targeting": targeting, "repeats_previous": [False] * len(targeting), "completion_tokens": tokens}
    hit, miss = [True] * 4, [False] * 4
    records = [call("v2", f"p{i}", 0, hit, 1000) for i in range(8)] + \
              [call("x", f"p{i}", 0, miss, 600 + i) for i in range(8)] + \
              [call("x", "p9", 0, miss, 10), call("v2", "p8", 0, hit, 1, ok=False), call("x", "p8", 0, miss, 1)]
    (row,) = dq.paired(records)
    assert row["variant"] == "x" and row["requests"] == 8  # p9 has no v2 request; p8's v2 call failed
    t = row["targeting"]
    assert (t["reference"], t["variant"], t["difference"]) == (1.0, 0.0, -1.0) and t["p"] < 0.01  # 8 of 8 lower
    assert row["completion_tokens"]["difference"] == -396.5 and row["repeats_previous"]["p"] is None  # no change
    one = dq.paired([call("v2", "p0", 0, hit, 5), call("x", "p0", 0, miss, 5),
                     call("v2", "p1", 0, hit, 5), call("x", "p1", 0, hit, 5)])[0]["targeting"]
    assert one["difference"] == -0.5 and one["p"] == 1.0  # one request of two: not evidence


def test_the_rule_decides_each_idea_from_the_paired_table():
    """The pre-set rule, applied to paired rows: an idea stays only for a significant harm of removing it (less
    targeting, more repeats or tokens); a help of removing it, or no significant difference, sends it away; a new
    idea is adopted for significantly fewer tokens unless it significantly lowers targeting; fewer than two
    requests per profile is provisional."""
    full = 2 * sum(len(ps) for ps in dq.PROFILES.values())

    def row(variant, targeting=(0.0, 1.0), repeats=(0.0, 1.0), tokens=(0.0, 1.0), requests=full):
        entry = lambda d, p: {"difference": d, "p": p, "requests": requests}  # noqa: E731
        return {"model": "qwen2.5-coder-1.5b", "variant": variant, "reference": "v2", "requests": requests,
                "targeting": entry(*targeting), "repeats_previous": entry(*repeats),
                "completion_tokens": entry(*tokens)}
    rows = [row("v2_no_targets", targeting=(-0.2, 0.01)),        # removing it costs targeting: stays
            row("v2_no_needs", targeting=(0.2, 0.01)),           # removing it helps: goes
            row("v2_json_history", repeats=(0.1, 0.2)),          # more repeats, not significant: goes
            row("v2_with_defaults", tokens=(400.0, 0.03), requests=full - 1),  # more tokens: stays (provisional)
            row("v2_analysis_once", targeting=(-0.05, 0.5), tokens=(-300.0, 0.01)),  # fewer tokens: adopted
            row("v2_no_advice", tokens=(-500.0, 0.001), repeats=(0.2, 0.04)),      # more repeats: stays
            {**row("v2_no_targets"), "model": "other-model"}]    # another model's rows are not decisions
    verdicts = {d["idea"]: (d["verdict"], d["provisional"], d["reasons"]) for d in dq.decisions(rows)}
    assert verdicts == {
        "targets": ("stays", False, ["removing it lowers targeting"]),
        "needs": ("goes", False, ["removing it harms nothing with p < 0.05"]),
        "history: summary": ("goes", False, ["removing it harms nothing with p < 0.05"]),
        "only_changes": ("stays", True, ["removing it raises the tokens written"]),
        "advice repair turns": ("stays", False, ["removing it raises repeats"]),
        "analysis: first_reply": ("adopted", False, ["fewer tokens written"])}
    lowers = dq.decisions([row("v2_analysis_once", targeting=(-0.2, 0.01), tokens=(-300.0, 0.01))])
    assert [(d["verdict"], d["reasons"]) for d in lowers] == [
        ("not adopted", ["fewer tokens written", "but it lowers targeting"])]


def test_report_rebuilds_the_tables_from_the_stored_calls_without_a_model(run, tmp_path):
    _, _, out = run
    copy = tmp_path / "dq.json"
    data = json.loads(out.read_text())
    copy.write_text(json.dumps({**data, "aggregates": None, "calls": [
        {k: v for k, v in c.items() if k != "duplicates"} for c in data["calls"]]}))
    rebuilt = dq.main(["--report", "--out", str(copy)])  # no --models, no client: nothing is asked
    assert rebuilt["result"]["aggregates"] == data["aggregates"]  # scores are recomputed from the stored calls
    assert copy.with_suffix(".md").read_text() == out.with_suffix(".md").read_text()
    # Calls stored before re-asks were recorded: their re-asks are unknown, not zero.
    copy.write_text(json.dumps({**data, "calls": [{k: v for k, v in c.items() if k not in ("reasks", "repeats_left")}
                                                  for c in data["calls"]]}))
    (row,) = dq.main(["--report", "--out", str(copy)])["result"]["aggregates"]["overall"]
    assert row["reasks_per_call"] is None and row["duplicates_per_call"] == pytest.approx(1 / 3)
    with pytest.raises(SystemExit, match="does not exist"):
        dq.main(["--report", "--out", str(tmp_path / "none.json")])


def test_the_lowest_profile_is_reported_beside_the_average_and_decides_issue_45s_ideas():
    """The minimum over profiles, per variant and per game, names its profile; an idea of issue 45 is adopted when
    it raises that minimum without lowering the average (paired with v3_distinct, p < 0.05)."""
    def call(variant, profile, repeat, targeting, env="crafter"):
        return {"model": dq.AIM["model"], "variant": variant, "env": env, "profile": profile, "repeat": repeat,
                "ok": True, "targeting": targeting, "repeats_previous": [False] * 4, "duplicates": [False] * 4,
                "completion_tokens": 100, "first_try_valid": True, "repairs": 0, "configs": [{}] * 4,
                "helped_settings": None, "changed_settings": [], "baseline": 0.5, "copies": [False] * 4,
                "distinct": 1.0, "consistent": [], "latency_s": 1.0, "replies": 1, "prompt_tokens": 10,
                "reasks": 0}
    hit, miss, half = [True] * 4, [False] * 4, [True, True, False, False]
    records = []
    for r in range(2):
        records += [call("v3_distinct", "weak_plants", r, miss), call("v3_distinct", "weak_combat", r, hit),
                    call("v3_distinct", "weak_keys", r, half, "heist"),
                    call("v3_weak_needs", "weak_plants", r, half), call("v3_weak_needs", "weak_combat", r, hit),
                    call("v3_weak_needs", "weak_keys", r, half, "heist"),
                    call("v3_weak_levers", "weak_plants", r, half), call("v3_weak_levers", "weak_combat", r, miss),
                    call("v3_weak_levers", "weak_keys", r, half, "heist"),
                    call("v3_focus_weakest", "weak_plants", r, hit), call("v3_focus_weakest", "weak_combat", r, hit),
                    call("v3_focus_weakest", "weak_keys", r, half, "heist")]
    agg = dq.aggregate(records)
    overall = {r["variant"]: r for r in agg["overall"]}
    assert overall["v3_distinct"]["targeting_min"] == {"share": 0.0, "hits": 0, "of": 8, "env": "crafter",
                                                       "profile": "weak_plants"}
    assert overall["v3_distinct"]["targeting"]["share"] == 0.5  # the average hides the unserved plants
    heist = next(r for r in agg["by_env"] if (r["variant"], r["env"]) == ("v3_distinct", "heist"))
    assert heist["targeting_min"]["profile"] == "weak_keys" and heist["targeting_min"]["share"] == 0.5
    # a tie goes to the profile first in PROFILES' order
    assert overall["v3_weak_needs"]["targeting_min"]["profile"] == "weak_plants"
    pairs = dq.idea_pairs(records)
    assert {(p["variant"], p["reference"]) for p in pairs} == {
        ("v3_weak_needs", "v3_distinct"), ("v3_weak_levers", "v3_distinct"), ("v3_focus_weakest", "v3_weak_needs")}
    decided = {d["variant"]: d for d in dq.decisions_45(pairs, agg["overall"])}
    # needs: minimum 0% -> 50%, the average up; levers: minimum 0% -> 0% (combat now unserved), not adopted; focus,
    # built on needs and decided against it: minimum 50% -> 50% (the keys), not higher, so not adopted
    assert {v: d["verdict"] for v, d in decided.items()} == {
        "v3_weak_needs": "adopted", "v3_weak_levers": "not adopted", "v3_focus_weakest": "not adopted"}
    assert decided["v3_focus_weakest"]["reference"] == "v3_weak_needs"
    assert decided["v3_focus_weakest"]["reasons"][0] == "minimum over profiles 50% -> 50%: not higher"
    (aim,) = [a for a in dq.aims(agg["overall"], agg["by_env"], agg["by_profile"]) if a["variant"] == "v3_distinct"]
    assert (aim["profile_minimum"], aim["profile_minimum_at"], aim["profile_minimum_met"]) == (
        0.0, "crafter weak_plants", False)
    assert aim["duplicates_per_call"] == 0 and aim["duplicates_met"]


def test_issue_45_variants_are_v3_distinct_plus_one_setting():
    from envgen_jax.llm.settings import LLMSettings
    base = dq.llm_settings(dq.parse_args(["--models", "qwen2.5-coder-1.5b"]))
    v3, guarded = (dq.VARIANTS[v].settings(base) for v in ("v3", "v3_distinct"))
    assert not v3.strategy.distinct and guarded.strategy.distinct and guarded.replace(distinct=False) == v3
    assert dq.VARIANTS["v2"].settings(LLMSettings()).strategy.distinct is False  # measured before the guard
    for variant, change in (("v3_weak_needs", {"weak_needs": True}),
                            ("v3_weak_levers", {"weak_needs": True, "weak_levers": True}),
                            ("v3_targets_where_missing", {"unserved": "targets_first"}),
                            ("v3_focus_weakest", {"weak_needs": True, "focus": "weakest"}),
                            ("v3_focus_levers", {"weak_needs": True, "focus": "weakest", "weak_levers": True})):
        trial = {key: change.pop(key) for key in ("unserved",) if key in change}  # the benchmark's own (Trial)
        assert dq.VARIANTS[variant].settings(base) == dataclasses.replace(guarded.replace(**change), **trial), variant
