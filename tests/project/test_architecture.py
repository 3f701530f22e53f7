"""The package's shape, read from its source with ``ast`` (imports inside functions
included): no import cycle, small modules, DTensor reached from two subpackages only, no
private name crossing a package, no module reaching into another module's objects'
private attributes, plain-data packages free of TensorFlow, and no module that changes
the process when it is imported.

``python tests/project/test_architecture.py`` prints the tree with module sizes."""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "dtsgd_viz"
MAX_LINES = 800  # one idea per module, kept whole: a hard limit, no soft budget
MAX_TOP_LEVEL = 10
DTENSOR_PACKAGES = {"dtsgd_viz.dtensor", "dtsgd_viz.models"}
# what the plain-data parts may import at module level (never TensorFlow or widgets)
PLAIN = (
    "dtsgd_viz.recording",
    "dtsgd_viz.theory.reference",
    "dtsgd_viz.theory.quadratic",
    "dtsgd_viz.theory.convergence",
    "dtsgd_viz.specs",
    "dtsgd_viz.geometry",
    "dtsgd_viz.hooks",
    "dtsgd_viz.dtensor.model",
)
HEAVY = ("tensorflow", "tf_keras", "keras", "ipywidgets", "IPython")


class Module:
    def __init__(self, path: pathlib.Path):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        self.is_package = parts[-1] == "__init__"
        if self.is_package:
            parts = parts[:-1]
        self.name = ".".join(parts)
        self.path = path
        self.source = path.read_text()
        self.tree = ast.parse(self.source)
        self.lines = len(self.source.splitlines())
        self.package = self.name if self.is_package else self.name.rpartition(".")[0]

    def imports(self, with_typing: bool = True):
        """(absolute module, imported name or None, node, at module level); without
        ``with_typing``, not the imports under ``if TYPE_CHECKING:`` (annotations only:
        they never run, so they make no cycle)."""
        top = {id(n) for n in self.tree.body}
        typing = {
            id(n)
            for block in ast.walk(self.tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for stmt in block.body
            for n in ast.walk(stmt)
        }
        for node in ast.walk(self.tree):
            if not with_typing and id(node) in typing:
                continue
            if isinstance(node, ast.Import):
                for a in node.names:
                    yield a.name, None, node, id(node) in top
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = self.package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module
                for a in node.names:
                    yield target, a.name, node, id(node) in top


def modules() -> dict[str, Module]:
    return {m.name: m for m in map(Module, sorted(PACKAGE.rglob("*.py")))}


MODULES = modules()


def graph() -> dict[str, set[str]]:
    out = {}
    for m in MODULES.values():
        edges = set()
        for target, name, _, _ in m.imports(with_typing=False):
            if not target.startswith("dtsgd_viz"):
                continue
            sub = f"{target}.{name}" if name else None
            dest = sub if sub in MODULES else target
            # a package re-exporting its own children is not a cycle
            if dest in MODULES and dest != m.name and not (m.is_package and dest.startswith(m.name + ".")):
                edges.add(dest)
        out[m.name] = edges
    return out


def cycles(g) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_modules_are_small():
    sizes = {m.name: m.lines for m in MODULES.values()}
    assert {n: s for n, s in sizes.items() if s > MAX_LINES} == {}


def test_few_modules_at_the_top_level():
    top = [m.name for m in MODULES.values() if m.name.count(".") == 1 and not m.is_package]
    assert len(top) <= MAX_TOP_LEVEL, top


def test_dtensor_is_imported_by_two_subpackages_only():
    importers = set()
    for m in MODULES.values():
        for target, name, _, _ in m.imports():
            if target and (
                target.startswith("tensorflow.experimental.dtensor")
                or (target == "tensorflow.experimental" and name == "dtensor")
                or target.startswith("tensorflow.dtensor")
            ):
                importers.add(m.package)
    assert importers <= DTENSOR_PACKAGES, importers


def _private_crossings():
    """Imports of a private name (``_x``: a module or a name in one) from outside the
    package that holds it."""
    bad = []
    for m in MODULES.values():
        for target, name, node, _ in m.imports():
            if not target or not target.startswith("dtsgd_viz"):
                continue
            sub = f"{target}.{name}" if name else target
            parts = sub.split(".")
            for k, part in enumerate(parts[1:], start=1):
                if not part.startswith("_") or part.startswith("__"):
                    continue
                prefix = ".".join(parts[:k])
                holder = MODULES.get(prefix)
                owner = holder.package if holder is not None and not holder.is_package else prefix
                if owner != m.package:
                    bad.append(f"{m.name}:{node.lineno} imports {sub}")
                break
    return bad


def test_no_private_name_crosses_a_package():
    assert _private_crossings() == []


def test_plain_data_modules_import_no_tensorflow_or_widgets_at_import_time():
    bad = []
    for m in MODULES.values():
        if not m.name.startswith(PLAIN):
            continue
        for target, _, node, top in m.imports():
            if top and target and target.split(".")[0] in HEAVY:
                bad.append(f"{m.name}:{node.lineno} imports {target}")
    assert bad == []


def _is_side_effect(node) -> bool:
    """os.environ writes, os.dup2, logging/matplotlib configuration at module level."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = ast.unparse(n.func)
            if f in (
                "os.dup2",
                "os.environ.setdefault",
                "os.environ.update",
                "os.putenv",
                "matplotlib.use",
                "tf.config.set_logical_device_configuration",
                "tf.get_logger().setLevel",
                "logging.basicConfig",
            ):
                return True
        if isinstance(n, (ast.Assign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(ast.unparse(t).startswith(("os.environ[", "matplotlib.rcParams", "plt.rcParams")) for t in targets):
                return True
    return False


def _module_level(tree):
    """Statements run at import: the module body, minus function and class bodies
    (class bodies run too, but only define names here)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node


def _side_effects(tree) -> list[int]:
    """Lines run at import that change the process, directly or by calling a function of
    the same module that does."""
    changing = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and _is_side_effect(n)}
    out = []
    for node in _module_level(tree):
        calls = {ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}
        if _is_side_effect(node) or calls & changing:
            out.append(node.lineno)
    return out


def test_no_module_changes_the_process_when_imported():
    bad = [f"{m.name}:{line}" for m in MODULES.values() for line in _side_effects(m.tree)]
    assert bad == []


def test_the_side_effect_check_sees_them():
    tree = ast.parse(
        "import os\nos.environ.setdefault('X', '1')\nwith q():\n    os.dup2(1, 2)\n"
        "def quiet():\n    os.dup2(1, 2)\nwith quiet():\n    import math\n"
        "def fine():\n    return 1\nfine()\n"
    )
    assert _side_effects(tree) == [2, 3, 7]


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            "from ..views._tensor_panel import draw",
            ["dtsgd_viz.widgets.x:1 imports dtsgd_viz.views._tensor_panel.draw"],
        ),
        ("from ..runs import _check", ["dtsgd_viz.widgets.x:1 imports dtsgd_viz.runs._check"]),
        ("from . import _canvas", []),
    ],
)
def test_the_private_name_check(source, expected, monkeypatch):
    fake = Module.__new__(Module)
    fake.name, fake.package, fake.is_package = "dtsgd_viz.widgets.x", "dtsgd_viz.widgets", False
    fake.tree, fake.lines = ast.parse(source), 1
    extra = {"dtsgd_viz.widgets.x": fake}
    for name, package in [
        ("dtsgd_viz.views._tensor_panel", "dtsgd_viz.views"),
        ("dtsgd_viz.runs", "dtsgd_viz"),
        ("dtsgd_viz.widgets._canvas", "dtsgd_viz.widgets"),
    ]:
        stub = Module.__new__(Module)
        stub.name, stub.package, stub.is_package = name, package, False
        stub.tree, stub.lines = ast.parse(""), 0
        extra[name] = stub
    monkeypatch.setattr(sys.modules[__name__], "MODULES", extra)
    assert _private_crossings() == expected


def _is_private(name: str) -> bool:
    """``_x``, not ``__x__`` and not an IPython display hook (``_repr_html_``)."""
    return name.startswith("_") and not name.endswith("_")


def class_privates(tree) -> set[str]:
    """The private attributes the classes of a module define: their methods and class
    attributes named ``_x`` and every ``self._x``/``cls._x`` they assign."""
    out = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _is_private(node.name):
                out.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                out.update(t.id for t in targets if isinstance(t, ast.Name) and _is_private(t.id))
        for n in ast.walk(cls):
            if (
                isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store)
                and _is_private(n.attr)
                and isinstance(n.value, ast.Name)
                and n.value.id in ("self", "cls")
            ):
                out.add(n.attr)
    return out


def _foreign_private_access():
    """Reads and writes ``x._name`` (``x`` not ``self``/``cls``/``super()``) of a private
    attribute that a class of another dtsgd_viz module defines and the accessing module
    does not: one module's code reaching into another's objects. A private name no
    dtsgd_viz class defines (tf-keras', TensorFlow's, matplotlib's) is theirs, not ours."""
    defined = {name: class_privates(m.tree) for name, m in MODULES.items()}
    bad = []
    for m in MODULES.values():
        for n in ast.walk(m.tree):
            if not isinstance(n, ast.Attribute) or not _is_private(n.attr):
                continue
            if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                continue
            if isinstance(n.value, ast.Call) and ast.unparse(n.value.func) == "super":
                continue
            if n.attr in defined[m.name]:
                continue
            owners = sorted(o for o, names in defined.items() if o != m.name and n.attr in names)
            if owners:
                bad.append(f"{m.name}:{n.lineno} {ast.unparse(n)} (defined in {', '.join(owners)})")
    return sorted(set(bad))


@pytest.mark.slow
def test_no_module_reaches_into_another_modules_private_attributes():
    assert _foreign_private_access() == []


def test_the_private_attribute_check(monkeypatch):
    def fake(name, source):
        m = Module.__new__(Module)
        m.name, m.package, m.is_package = name, name.rpartition(".")[0], False
        m.tree, m.lines = ast.parse(source), len(source.splitlines())
        return m

    owner = fake(
        "dtsgd_viz.a",
        "class A:\n    def __init__(self):\n        self._count = 0\n    def _step(self):\n        self._count += 1\n",
    )
    user = fake(
        "dtsgd_viz.b",
        "def f(a, opt):\n    a._count = 2\n    a._step()\n"
        "    opt._variables\n    super()._step()\n    a._repr_html_()\n",
    )
    own = fake("dtsgd_viz.c", "class C:\n    def _step(self):\n        pass\ndef g(c):\n    c._step()\n")
    monkeypatch.setattr(sys.modules[__name__], "MODULES", {m.name: m for m in (owner, user, own)})
    assert _foreign_private_access() == [
        "dtsgd_viz.b:2 a._count (defined in dtsgd_viz.a)",
        "dtsgd_viz.b:3 a._step (defined in dtsgd_viz.a, dtsgd_viz.c)",
    ]


def tree_text() -> str:
    lines = []
    for m in sorted(MODULES.values(), key=lambda m: m.name):
        depth = m.name.count(".")
        label = m.name.rpartition(".")[2] + ("/" if m.is_package else ".py")
        lines.append(f"{'  ' * depth}{label:<{34 - 2 * depth}} {m.lines:>4}")
    return "\n".join(lines)


@pytest.mark.slow
def test_no_test_module_imports_another():
    """Shared test code lives in tests/helpers: a test importing another test module
    resolves only when pytest has put that module's folder on sys.path, so running one
    folder alone fails."""
    tests = pathlib.Path(__file__).resolve().parents[1]
    found = []
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found += [f"{path.relative_to(tests)}: {n}" for n in names if n.split(".")[0].startswith("test_")]
    assert found == []


def _public_functions(tree, private=False):
    """``(function node, its qualified name)`` for every public function and method of a
    module tree: not named ``_x`` (dunders are public), not inside a ``_X`` class."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.ClassDef):
            yield from ((f, f"{node.name}.{q}") for f, q in _public_functions(node, private or _is_private(node.name)))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not private and not _is_private(node.name):
            yield node, node.name


def _unannotated(m) -> list[str]:
    """``module:line name (what is missing)`` for each public function or method of ``m``
    with a parameter (but ``self``/``cls``) or its return unannotated (``__init__``'s
    return may go unsaid)."""
    out = []
    for f, name in _public_functions(m.tree):
        a = f.args
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg))]
        missing = [p.arg for p in params if p.annotation is None and p.arg not in ("self", "cls")]
        if f.returns is None and f.name != "__init__":
            missing.append("return")
        if missing:
            out.append(f"{m.name}:{f.lineno} {name} ({', '.join(missing)})")
    return out


def test_every_public_function_and_method_is_annotated():
    """The package ships ``py.typed``: what a user calls says its types (basedpyright,
    run by ``make lint``, checks they hold). Modules named ``_x`` are private whole."""
    public = [m for m in MODULES.values() if not any(_is_private(p) for p in m.name.split("."))]
    assert [line for m in public for line in _unannotated(m)] == []


def test_the_annotation_check_sees_a_gap():
    m = Module.__new__(Module)
    m.name = "dtsgd_viz.x"
    m.tree = ast.parse(
        "def f(a: int, b) -> int: ...\n"
        "def _g(a): ...\n"
        "class C:\n    def __init__(self, n: int): ...\n    def h(self, *xs: int): ...\n"
        "    def __len__(self) -> int: ...\n"
        "class _D:\n    def k(self, a): ...\n"
    )
    assert _unannotated(m) == ["dtsgd_viz.x:1 f (b)", "dtsgd_viz.x:5 C.h (return)"]


if __name__ == "__main__":
    print(tree_text())
    print("cycles:", cycles(graph()))
    print(f"over {MAX_LINES} lines:", {m.name: m.lines for m in MODULES.values() if m.lines > MAX_LINES})
