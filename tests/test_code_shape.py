"""The package's shape as issue 43 set it: no class over 200 lines, the PPO update in one module of at most 300 lines
that knows nothing of level replay, and the run layer in one package that looks the method up in one place."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "envgen_jax"


def _classes():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                yield f"{path.relative_to(PACKAGE)}:{node.name}", node.end_lineno - node.lineno + 1


def test_no_class_over_200_lines():
    sizes = dict(_classes())
    assert sizes, "no classes found"
    assert {name: n for name, n in sizes.items() if n > 200} == {}


def test_the_ppo_update_is_one_short_module_without_level_replay():
    """Level replay reaches the update only as data (a gradient mask), recurrence only through the network's Agent
    and the minibatcher it is given: the module's code names neither, and has no conditional per minibatch."""
    source = (PACKAGE / "trainer" / "ppo.py").read_text()
    assert len(source.splitlines()) <= 300
    tree = ast.parse(source)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not names & {"sampler", "level_sampler", "recurrent", "cond", "switch"}, names
    assert not imported & {"envgen_jax.trainer.level_sampler", "envgen_jax.trainer.replay"}


def test_a_run_looks_its_method_up_in_one_place():
    lookups = [path.name for path in (PACKAGE / "run").glob("*.py") if "methods.get(" in path.read_text()]
    assert lookups == ["parts.py"]
