"""The games registry (envgen_jax.games): one line per game, the game's own package declaring everything else; a
new game registered from a test; the games' options in a run configuration, old run directories' `heist_mode`
included; and no import cycle between the registry, the games' packages and the designer (llm/)."""

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from envgen_jax import games
from envgen_jax.cli import main
from envgen_jax.llm import Designer, LLMSettings
from envgen_jax.llm.prompts import feedback_prompt, generation_prompt
from envgen_jax.llm.settings import Strategy
from envgen_jax.llm.testing import ScriptedClient, auto_reply
from envgen_jax.methods.base import PAPER_LOOP, Method
from envgen_jax.run_config import RunConfig, load_run_config
from envgen_jax.schema import ConfigError, Declared, bounded
from tests import golden
from tests.test_code_shape import cycles, import_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "envgen_jax"



def test_the_registry_is_one_line_per_game_resolved_on_first_use():
    assert all(isinstance(entry, str) and entry.endswith(".game") for entry in games.GAMES.values())
    for name in ("crafter", "heist"):
        game = games.get(name)
        assert game.name == name and game is games.get(name)
        assert game.config_cls.ENV_NAME == name and games.config_class(name) is game.config_cls
        spec = game.designer_spec()
        assert spec.name == name and spec.targeting is game.targeting and spec.check is None
        assert spec.prompts_dir == PACKAGE / "envs" / name / "prompts"
        assert all(spec.template_path(kind).is_file() for kind in ("generate", "feedback", "rules", "needs"))
        assert set(game.targeting.own_levers) == set(game.achievements)
    with pytest.raises(ConfigError, match="'minigrid' is not known; expected one of crafter, heist"):
        games.get("minigrid")


def test_a_new_game_is_one_package_and_one_registry_line(toy, tmp_path, capsys):
    config_cls = toy.config_cls
    assert "toy" in games.NAMES and toy.name == "toy" and config_cls.__name__ == "ToyConfig"
    # the designer: prompts from the game's own templates, replies validated against its config, its targeting map
    spec = toy.designer_spec()
    text = generation_prompt(spec, 2)
    assert text.startswith("Design 2 rooms of Toy.") and "world_settings.coins" in text
    assert "\ncollect_coin\n" in text  # by name; with llm.needs, with what it needs from the game's needs.txt
    assert "collect_coin: needs a coin in the room" in generation_prompt(spec, 2, Strategy(needs=True))
    assert "cross_room: 50%" in feedback_prompt(spec, {"collect_coin": 10.0, "cross_room": 50.0}, [], 2)
    client = ScriptedClient(default=auto_reply(config_cls))
    configs, _ = Designer(spec, LLMSettings.of(backend="openai", model="fake"), client=client).generate(2)
    assert len(configs) == 2 and all(type(c) is config_cls for c in configs)
    rich = config_cls.from_dict({"world_settings": {"coins": 5}})
    assert spec.targeting.helps(rich, ["cross_room"]) == ["world_settings.coins"]  # a prerequisite's lever
    assert spec.targeting.purpose_consistency("Collect coins.", rich) is True
    # its options in a run configuration, checked like every setting
    assert load_run_config(None, ["env=toy", "game_options.size=large"]).game_options.size == "large"
    assert RunConfig(env="toy").game_options == toy.options_cls()
    with pytest.raises(ConfigError) as err:
        load_run_config(None, ["env=toy", "game_options.size=huge", "game_options.mode=easy"])
    assert set(err.value.problems) == {"game_options.size: 'huge' is not one of 'small', 'large'",
                                       "game_options.mode: unknown setting; allowed: size"}
    # the command line knows it
    assert main(["settings", "--env", "toy"]) == 0
    assert "world_settings.coins" in capsys.readouterr().out
    path = tmp_path / "rooms.json"
    path.write_text(json.dumps([{"world_settings": {"lava": False}}]))
    assert main(["validate", str(path), "--env", "toy", "--option", "size=large"]) == 0
    assert "1 valid toy configuration" in capsys.readouterr().out
    assert main(["validate", str(path), "--env", "toy", "--option", "size=huge"]) == 1
    assert "game_options.size: 'huge' is not one of 'small', 'large'" in capsys.readouterr().err


# A method from outside the package (docs/adding-a-method.md): its own design step, its own settings and the one
# registry line.
@dataclasses.dataclass(frozen=True)
class CoinRoomsOptions(Declared):
    most_coins: int = bounded(5, minimum=1)
    """the most coins a room holds"""

    PATH, WHAT = "method_options.coin_rooms.", "coin_rooms options"


class CoinRooms(Method):
    """Every cycle, rooms without lava and with more coins than the cycle before (no LLM)."""
    NAME = "coin_rooms"
    PROGRAM = PAPER_LOOP  # new rows each cycle, the paper loop's program
    OPTIONS = CoinRoomsOptions  # `method_options.coin_rooms` in a run configuration

    @staticmethod
    def design(ctx):
        most = CoinRooms.options(ctx.cfg).most_coins
        configs = [ctx.config_cls(coins=min(most, ctx.cycle + 1 + i), lava=False) for i in range(ctx.n)]
        return [{"configs": [c.to_dict() for c in configs], "purposes": ["coins, no lava"] * ctx.n}
                for _ in range(ctx.num_designers)]


# The golden runs' tiny shapes (tests/golden.py), with the pictures a walk-through shows.
TINY = golden.TINY + ["output.pictures=true"]


def test_a_new_game_and_a_new_method_train(toy, tmp_path, monkeypatch):
    """The walk-throughs of docs/adding-a-game.md and docs/adding-a-method.md: the toy game (one package, one registry
    line) trains with the paper's method and a scripted designer, and a toy method (one class, one registry line)
    trains on it, end to end through the run."""
    from envgen_jax import methods
    from envgen_jax.run.loop import EnvGenRun

    monkeypatch.setitem(methods.REGISTRY, "coin_rooms", CoinRooms)  # the one line (methods.register does the same)
    assert "coin_rooms" in methods.METHODS
    # its settings in a run configuration, checked like every setting
    few = load_run_config(None, ["method=coin_rooms", "method_options.coin_rooms.most_coins=2"])
    assert few.method_options.coin_rooms.most_coins == 2 and few.method_options.sfl.pool == 64
    with pytest.raises(ConfigError) as err:
        load_run_config(None, ["method=coin_rooms", "method_options.coin_rooms.most_coins=0",
                               "method_options.coin_rooms.lava=1"])
    assert set(err.value.problems) == {"method_options.coin_rooms.most_coins: 0 is below the minimum 1",
                                       "method_options.coin_rooms.lava: unknown setting; allowed: most_coins"}
    plain = auto_reply(toy.config_cls)

    def with_targets(request):  # what the designer writes with llm.targets: the skills each environment trains
        reply = json.loads(plain(request))
        for env in reply["environments"]:
            env["targets"] = ["collect_coin"]
        return json.dumps(reply)

    client = ScriptedClient(default=with_targets)
    calls = {}
    for method in ("envgen", "coin_rooms"):
        out = tmp_path / method
        cfg = load_run_config(None, TINY + ["env=toy", f"method={method}", "llm.backend=openai", "llm.model=fake",
                                            "llm.targets=true"])
        report = EnvGenRun(cfg, out, llm_client=client).run()
        assert report["env_steps"] == 2 * (256 + 256) + 512  # 12 PPO updates per seed in the toy's environments
        assert report["seeds"] == 2 and set(report["achievements"]) == {"collect_coin", "cross_room"}
        assert all(0.0 <= v <= 100.0 for v in report["achievements"].values())
        second = json.loads((out / "environments" / "cycle_2.json").read_text())["environments"]
        assert len(second) == 2 and (out / "environments" / "cycle_2.png").is_file()
        metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        assert sum(r["episodes_per_seed"][0] for r in metrics) > 0  # the toy's episodes ended and were counted
        calls[method] = report["llm_calls"]
    assert [e["config"] for e in second] == [{"world_settings": {"coins": 2, "lava": False}},
                                             {"world_settings": {"coins": 3, "lava": False}}]
    assert "targets" not in second[0]  # coin_rooms names none
    # envgen's environments file holds what each environment trains, and reads back as configurations
    written = tmp_path / "envgen" / "environments" / "cycle_2.json"
    assert [e["targets"] for e in json.loads(written.read_text())["environments"]] == [["collect_coin"]] * 2
    assert len(games.read_config_file(written, "toy")) == 2
    assert calls == {"envgen": 2, "coin_rooms": 0}  # envgen asked the LLM once a cycle; coin_rooms never
    with pytest.raises(TypeError, match="NAME 'other'"):
        methods.register("other", CoinRooms)


def test_a_registry_entry_must_name_its_game(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "not_a_game.py").write_text("GAME = 3\n")
    monkeypatch.setitem(games.GAMES, "nothing", "not_a_game")
    with pytest.raises(TypeError, match="not_a_game.GAME must be the Game named 'nothing'"):
        games.get("nothing")


# ------------------------------------------------------------------------------------------------ game options
def test_game_options_are_the_games_own_and_checked_by_path():
    assert RunConfig(env="heist").game_options == games.get("heist").options_cls(mode="hard")
    crafter_options = games.get("crafter").options_cls
    assert RunConfig().game_options == crafter_options(step_loops="scan")  # Crafter's one option, at its default
    easy = load_run_config(ROOT / "configs" / "heist_envgen.yaml", ["game_options.mode=easy"])
    assert easy.game_options.mode == "easy" and easy.to_dict()["game_options"] == {"mode": "easy"}
    assert games.get("heist").make_env("symbolic", easy.game_options).world_dim == 9
    assert load_run_config(ROOT / "configs" / "heist_envgen.yaml").game_options.mode == "hard"
    cases = {("env=heist", "game_options.mode=medium"): "game_options.mode: 'medium' is not one of 'easy', 'hard'",
             ("game_options.mode=easy",): "game_options.mode: unknown setting; allowed: step_loops",
             ("env=heist", "game_options=3"): "game_options: expected a mapping of settings, got 3",
             ("env=heist", "game_options.size=9"): "game_options.size: unknown setting; allowed: mode"}
    for overrides, problem in cases.items():
        with pytest.raises(ConfigError) as err:
            load_run_config(None, list(overrides))
        assert err.value.problems == [problem], overrides


def test_old_run_directories_with_heist_mode_still_load(tmp_path):
    # Written before the games had options: every run's config.yaml held `heist_mode` (tests/data/golden/old_run,
    # benchmarks/results/study_cpu/*/config.yaml).
    old = load_run_config(ROOT / "tests" / "data" / "golden" / "old_run" / "config.yaml")
    assert old.env == "crafter" and old.game_options == games.get("crafter").options_cls()
    assert "heist_mode" not in old.to_dict()
    path = tmp_path / "config.yaml"
    path.write_text("env: heist\nheist_mode: easy\n")
    assert load_run_config(path) == load_run_config(None, ["env=heist", "game_options.mode=easy"])
    assert load_run_config(path, ["game_options.mode=hard"]).game_options.mode == "hard"  # a later --set wins
    assert load_run_config(None, ["env=heist", "heist_mode=easy"]).game_options.mode == "easy"  # old --set
    assert load_run_config(ROOT / "configs" / "heist_envgen.yaml", ["heist_mode=easy"]).game_options.mode == "easy"
    path.write_text("env: heist\nheist_mode: easy\ngame_options: {mode: hard}\n")
    with pytest.raises(ConfigError, match="heist_mode: 'easy' differs from game_options.mode = 'hard'"):
        load_run_config(path)
    path.write_text("env: crafter\nheist_mode: medium\n")  # checked as it was, though Crafter ignores it
    with pytest.raises(ConfigError, match="heist_mode: 'medium' is not one of 'easy', 'hard'"):
        load_run_config(path)


def test_an_old_study_yaml_still_loads(tmp_path):
    from envgen_jax.study import load_settings
    path = tmp_path / "study.yaml"
    path.write_text("config: x\noverrides: []\nmethods: [ppo, random]\nrun:\n  env: heist\n  heist_mode: easy\n")
    settings = load_settings(path)
    assert settings.run["game_options"] == {"mode": "easy"} and "heist_mode" not in settings.run
    assert settings.run_config("random").game_options.mode == "easy"


# ------------------------------------------------------------------------------------------------ import cycles
def test_no_import_cycle_through_the_registry_the_games_or_the_designer():
    graph = import_graph()  # tests/test_code_shape.py: imports inside functions and the registry's lines included
    assert "envgen_jax.envs.heist.game" in graph["envgen_jax.games"]
    ours = re.compile(r"envgen_jax\.(games|envs|llm)\b")
    assert [c for c in cycles(graph) if any(ours.match(m) for m in c)] == []
    # the designer takes a game's EnvSpec: nothing in llm/ imports the registry or a game's package
    assert not [(m, i) for m, imports in graph.items() if m.startswith("envgen_jax.llm")
                for i in imports if i.startswith(("envgen_jax.games", "envgen_jax.envs"))]


def test_no_game_name_in_the_designer_package():
    for path in (PACKAGE / "llm").glob("*.py"):
        code = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(code)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        named = [n.value for n in ast.walk(code) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                 and id(n) not in docstrings and re.search(r"\b(crafter|heist)\b", n.value, re.IGNORECASE)]
        assert named == [], (path.name, named)
