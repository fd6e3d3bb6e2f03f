"""Every Python example on the documentation site runs (they are what a user copies first).

A ```` ```python ```` block is a runnable example; a fragment that cannot run on its own (e.g. one that
needs the separate MPC virtualenv) is fenced as ```` ```py ````.
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
EXAMPLES = [
    (path, i, code)
    for path in sorted(DOCS.rglob("*.md"))
    for i, code in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S))
]


def test_the_docs_have_examples():
    pages = {p.relative_to(DOCS).as_posix() for p, _, _ in EXAMPLES}
    statistics = {p.relative_to(DOCS).as_posix() for p in (DOCS / "statistics").glob("*.md")}
    assert statistics and statistics <= pages, statistics - pages  # one runnable example per statistic


@pytest.mark.parametrize(
    ("path", "index", "code"), EXAMPLES, ids=[f"{p.relative_to(DOCS).as_posix()}#{i}" for p, i, _ in EXAMPLES]
)
def test_docs_example_runs(path, index, code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"{path.name}[{index}]", "exec"), {"__name__": "__docs__"})
    assert out.getvalue().strip(), "an example should print what it computes"
