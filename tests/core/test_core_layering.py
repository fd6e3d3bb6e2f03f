"""The layering of docs/design.md holds: building blocks never import the statistics, services or CLI,
and modules outside privacy/ form no import loop (privacy/ has its own, being untangled)."""

import ast
from pathlib import Path

import privstats

SRC = Path(privstats.__file__).resolve().parent
BUILDING_BLOCKS = ("privacy", "local", "shuffle", "secure", "central", "ustat", "cdf", "summarization")
UPPER = ("privstats.stats", "privstats.services", "privstats.cli")


def _modules() -> dict[str, Path]:
    out = {}
    for p in SRC.rglob("*.py"):
        parts = ["privstats", *p.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """privstats modules imported anywhere in the file (module level or inside functions)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t.startswith("privstats") and t != name:
                found.add(t)
    return found


GRAPH = {name: _imports(name, path, _modules()) for name, path in _modules().items()}


def test_building_blocks_do_not_import_the_layers_above():
    bad = sorted(
        (m, t)
        for m, targets in GRAPH.items()
        if m.split(".")[1:2] and m.split(".")[1] in BUILDING_BLOCKS
        for t in targets
        if t.startswith(UPPER)
    )
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_loop_outside_privacy():
    outside = {m: {t for t in ts if not t.startswith("privstats.privacy.")} for m, ts in GRAPH.items()}
    outside = {m: ts for m, ts in outside.items() if not m.startswith("privstats.privacy.")}
    assert _cycles(outside) == []


def test_the_loop_finder_finds_a_loop():
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
