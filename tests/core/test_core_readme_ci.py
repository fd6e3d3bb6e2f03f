"""CI (.ci/run) runs lint, types and the docs build, then exactly the README's test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _ci_lines() -> list[str]:
    return [
        ln.strip()
        for ln in (ROOT / ".ci" / "run").read_text().splitlines()
        if ln.strip() and not ln.strip().startswith("#")
    ]


def _readme_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.S)


def test_ci_runs_the_readme_test_command():
    blocks = _readme_blocks()
    test_cmd = next(b for b in blocks if "pytest" in b).strip()
    assert test_cmd in _ci_lines()
    assert any("privstats demo" in b for b in blocks[:2])


def test_ci_lints_types_and_builds_the_docs_before_the_tests():
    lines = _ci_lines()
    test_cmd = next(b for b in _readme_blocks() if "pytest" in b).strip()

    def first(pattern: str) -> int:
        return next(i for i, ln in enumerate(lines) if re.search(pattern, ln))

    install = first(r'^python -m pip install -e "\.\[test\]"$')
    steps = [
        first(r"ruff check \.$"),
        first(r"ruff format --check \.$"),
        first(r"&& mypy$"),
        first(r"mkdocs build --strict"),
    ]
    assert install < min(steps) and max(steps) < lines.index(test_cmd)
    # an empty test run (pytest exit code 5) fails CI; the MPC checks run after the tests
    assert any('"$status" -eq 5' in ln for ln in lines)
    assert lines.index(test_cmd) < first(r"bash \.ci/mpc")


def test_the_tools_ci_runs_are_installed_by_the_test_extra():
    text = (ROOT / "pyproject.toml").read_text()
    extras = dict(re.findall(r"^(\w+) = (\[.*\])$", text, flags=re.M))
    assert "dev" in extras["test"] and "lint" in extras["dev"] and "docs" in extras["dev"]
    assert all(tool in extras["lint"] for tool in ("ruff", "mypy"))
    assert "mkdocs-material" in extras["docs"] and "mkdocstrings[python]" in extras["docs"]
    assert (ROOT / "src" / "privstats" / "py.typed").exists()
    assert re.search(r'privstats = \["py.typed"\]', text)
