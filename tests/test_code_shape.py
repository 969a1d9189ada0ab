"""The package's shape. Issue 43: no class over 200 lines (issue 63: 180), the PPO update in one module of at most
300 lines that knows nothing of level replay, and the run layer in one package that looks the method up in one place.
Issue 55: the layers of docs/package.md (no import runs upward, no cycle between modules or subpackages, imports
inside functions included), no module over 500 lines (issue 63: 450), no function over 100, no settings class over
20 fields."""

import ast
from pathlib import Path

from envgen_jax import games

PACKAGE = Path(__file__).resolve().parent.parent / "envgen_jax"


def _classes():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                yield f"{path.relative_to(PACKAGE)}:{node.name}", node.end_lineno - node.lineno + 1


def test_no_class_over_180_lines():
    sizes = dict(_classes())
    assert sizes, "no classes found"
    assert {name: n for name, n in sizes.items() if n > MAX_CLASS_LINES} == {}


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


# -- layers and sizes (issue 55) -----------------------------------------------------------------------------------
# The package's layers, lowest first (docs/package.md, "Layers"): a module imports only from its own layer or those
# below it. `llm` sits below `envs` because it is generic over games (it takes a game's EnvSpec, never a name) while
# each game declares its targeting map in llm's vocabulary (`llm.targeting`); `report` sits above `methods` because it
# shows what the design step reads (`methods.learning`), below `run`, which writes it; `run_config` above `methods`
# because a run's configuration validates the method's own settings. `envgen_jax` is the package's own __init__.
LAYERS = ("schema", "config_io", "llm", "envs", "games", "trainer", "methods", "report", "run_config", "run", "study",
          "cli", "envgen_jax")

# The game's design space is the flat list of settings the LLM writes (the paper's prompts, the JSON schema, every
# saved environment): it is data the designer fills in, not a settings class, and nesting it would change all three.
DESIGN_SPACES = {"CrafterConfig", "CraftaxConfig"}
MAX_CLASS_LINES, MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_FIELDS = 180, 450, 100, 20


def module_name(path: Path) -> str:
    parts = ["envgen_jax", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(name: str, path: Path, known) -> set[str]:
    """Every envgen_jax module `name` imports, at module level or inside functions (TYPE_CHECKING blocks too);
    `from a import b` names a.b where that is a module, else a; relative imports resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module: the module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module -> the envgen_jax modules it imports, the registry's games (imported by name at run time) included."""
    paths = {module_name(path): path for path in sorted(package.rglob("*.py"))}
    graph = {name: _imported(name, path, paths) for name, path in paths.items()}
    graph["envgen_jax.games"] |= {entry for entry in games.GAMES.values() if entry in paths}
    return graph


def unit(module: str) -> str:
    """The subpackage (or top-level module) a module belongs to: its layer's name."""
    return module.split(".")[1] if "." in module else module


def upward_imports(graph) -> list[tuple[str, str]]:
    return sorted((a, b) for a, targets in graph.items() for b in targets
                  if LAYERS.index(unit(a)) < LAYERS.index(unit(b)))


def unit_graph(graph) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        out.setdefault(unit(a), set()).update(unit(b) for b in targets if unit(b) != unit(a))
    return out


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one node (each holds at least one cycle), sorted."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node):  # Tarjan's algorithm; the graphs are small enough for recursion
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(out)


def test_every_module_sits_in_a_layer():
    graph = import_graph()
    assert len(graph) > 50 and "envgen_jax.envs.heist.game" in graph["envgen_jax.games"]
    assert {unit(m) for m in graph} - set(LAYERS) == set()


def test_the_layers_are_documented_in_their_order():
    """docs/package.md writes the order of LAYERS; the package's docstring lists the layers in it."""
    assert " -> ".join(LAYERS[:-1]) in (PACKAGE.parent / "docs" / "package.md").read_text()
    listed = [line.split()[0].removesuffix("/").removesuffix(".py")
              for line in ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())).splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed == list(LAYERS[:-1])


def test_no_import_runs_upward():
    assert upward_imports(import_graph()) == []


def test_no_cycle_between_modules():
    assert cycles(import_graph()) == []


def test_no_cycle_between_subpackages():
    assert cycles(unit_graph(import_graph())) == []


def test_the_graph_helpers_see_cycles_and_upward_imports():
    """The checks above would fail on a cycle made inside a function, or on a relative upward import."""
    graph = {"envgen_jax.envs.a": {"envgen_jax.trainer.b"}, "envgen_jax.trainer.b": {"envgen_jax.envs.a"}}
    assert cycles(graph) == [["envgen_jax.envs.a", "envgen_jax.trainer.b"]]
    assert upward_imports(graph) == [("envgen_jax.envs.a", "envgen_jax.trainer.b")]
    assert cycles(unit_graph(graph)) == [["envs", "trainer"]]
    source = "def f():\n    from ..trainer import metrics\n    from . import bank\n"
    known = {"envgen_jax.envs.x", "envgen_jax.envs.bank", "envgen_jax.trainer", "envgen_jax.trainer.metrics"}
    assert _imported("envgen_jax.envs.x", _Source(source), known) == {"envgen_jax.trainer.metrics",
                                                                      "envgen_jax.envs.bank"}


class _Source:
    """A stand-in for a module file (`_imported` reads its name and text)."""

    name = "x.py"

    def __init__(self, text: str):
        self.text = text

    def read_text(self) -> str:
        return self.text


def _sizes():
    """(module, lines), (module:function, lines) and (class, fields) of every module."""
    modules, functions, fields = {}, {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = f"envgen_jax/{path.relative_to(PACKAGE)}"
        source = path.read_text()
        modules[rel] = len(source.splitlines())
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[f"{rel}:{node.name}"] = node.end_lineno - node.lineno + 1
            elif isinstance(node, ast.ClassDef):
                fields[node.name] = sum(isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                                        and "ClassVar" not in ast.unparse(s.annotation) for s in node.body)
    return modules, functions, fields


def test_no_module_over_450_lines():
    modules, _, _ = _sizes()
    assert {m: n for m, n in modules.items() if n > MAX_MODULE_LINES} == {}


def test_no_function_over_100_lines():
    _, functions, _ = _sizes()
    assert {f: n for f, n in functions.items() if n > MAX_FUNCTION_LINES} == {}


def test_no_settings_class_over_20_fields():
    _, _, fields = _sizes()
    assert {c: n for c, n in fields.items() if n > MAX_FIELDS and c not in DESIGN_SPACES} == {}


# -- issue 63: the agent as modules, old keys in one place ----------------------------------------------------------
def test_one_convolution_one_residual_block_and_no_layers_set_by_name():
    trainer = [PACKAGE / "trainer" / name for name in ("layers.py", "networks.py", "encoders.py")]
    classes = [node.name for path in trainer for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.ClassDef)]
    assert [c for c in classes if "Conv" in c and "Encoder" not in c and "Net" not in c] == ["Conv"]
    assert [c for c in classes if "ResidualBlock" in c] == ["ResidualBlock"]
    calls = {node.func.id for path in trainer for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert "setattr" not in calls


def test_older_keys_are_moved_by_one_function_with_one_message():
    """The --set-wins rule and its message live in config_io alone; run_config holds the one table."""
    message = "is the old name of"
    assert [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py")) if message in p.read_text()] == \
        ["config_io.py"]
    movers = [str(p.relative_to(PACKAGE)) for p in sorted(PACKAGE.rglob("*.py"))
              if "move_old_keys(" in p.read_text() and "def move_old_keys(" not in p.read_text()]
    assert movers == ["llm/settings.py", "run_config.py", "study/settings.py"]


def _patched_modules(source: str, filename: str) -> list[str]:
    """Where `source` replaces something of a jax or craftax module, as file:line, through the names it imports them
    under: an assignment or `del` whose target is an attribute of one (`jax.lax.scan = ...`, `craftax.x.y += ...`,
    `jax.lax.scan, x = ...`) or an item of its namespace (`jax.lax.__dict__["scan"] = ...`, `vars(jax.lax)[...]`),
    `setattr`/`delattr` on one (also as `object.__setattr__`), and `mock.patch("jax...")`/`patch.object(jax...)`."""
    tree = ast.parse(source)
    packages = {"jax", "craftax"}
    roots = set(packages)
    for node in ast.walk(tree):  # `import jax.numpy as jnp`, `from craftax.craftax import game_logic as gl`
        if isinstance(node, ast.Import):
            roots |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.split(".")[0] in packages}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in packages:
            roots |= {a.asname or a.name for a in node.names}

    def of_module(target) -> bool:
        while isinstance(target, (ast.Attribute, ast.Subscript)) or (  # vars(jax.lax) is jax.lax's namespace
                isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "vars"
                and len(target.args) == 1):
            target = target.args[0] if isinstance(target, ast.Call) else target.value
        return isinstance(target, ast.Name) and target.id in roots

    def replaces(node) -> bool:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            leaves = [leaf for t in targets for leaf in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
            return any(isinstance(leaf, (ast.Attribute, ast.Subscript)) and of_module(leaf.value) for leaf in leaves)
        if not (isinstance(node, ast.Call) and node.args):
            return False
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        first = node.args[0]
        if name in ("setattr", "delattr", "__setattr__", "__delattr__") or (
                name == "object" and isinstance(node.func, ast.Attribute) and node.func.value is not None
                and getattr(node.func.value, "id", getattr(node.func.value, "attr", "")) == "patch"):
            return of_module(first)  # setattr(jax.random, ...), object.__setattr__(...), patch.object(jax.lax, ...)
        return name == "patch" and isinstance(first, ast.Constant) and isinstance(first.value, str) and \
            first.value.split(".")[0] in packages  # mock.patch("jax.lax.scan", ...)

    return [f"{filename}:{line}" for line in sorted({node.lineno for node in ast.walk(tree) if replaces(node)})]


def test_no_patched_modules():
    """Issue 74: the package never replaces anything of jax's or craftax's (the unrolled-loop experiment that did
    lives in benchmarks/)."""
    found = [hit for path in sorted(PACKAGE.rglob("*.py"))
             for hit in _patched_modules(path.read_text(), str(path.relative_to(PACKAGE.parent)))]
    assert not found, f"assignments to attributes of jax or craftax modules: {found}"
    bad = ("import jax\nimport jax.numpy as jnp\nfrom craftax.craftax import game_logic as gl\n"
           "jax.lax.scan, x = 1, 2\njnp.foo = 1\ngl.spawn_mobs += 1\nsetattr(jax.random, 'choice', 1)\n"
           "del jax.lax.scan\njax.lax.__dict__['scan'] = 1\nvars(gl)['x'] = 1\nobject.__setattr__(jnp, 'x', 1)\n"
           "mock.patch('craftax.x.y', 1)\nmock.patch.object(jax.lax, 'scan', 1)\n"
           "state.x = 1\nself.jax = 2\nd['jax'] = 1\nsetattr(state, 'x', 1)\nmock.patch('os.getcwd')\n"
           "x = jax.lax.scan\nrows[jnp.arange(2)] = 1\n")
    assert _patched_modules(bad, "f.py") == [f"f.py:{n}" for n in range(4, 14)]
    experiment = PACKAGE.parent / "benchmarks" / "unrolled_loops.py"
    assert _patched_modules(experiment.read_text(), "unrolled_loops.py")  # the scan sees what it is there for


def test_no_private_jax_imports():
    """Issue 74: nothing in the package reaches into JAX's internals (`jax._src`), which change without notice between
    versions; the multi-process runtime is reached through `jax.distributed` alone (run.distributed, run.supervise)."""
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if "jax._src" in line]
    assert not found, f"jax._src in the package: {', '.join(found)}"
