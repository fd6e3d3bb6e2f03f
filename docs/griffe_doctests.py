"""A griffe extension for the API reference: docstring examples (``>>>`` blocks) render as code.

privstats' docstrings put their doctests in free text, not always under a numpy ``Examples`` header; in
Markdown a ``>>>`` line would otherwise become a block quote and ``x[0][1]`` a reference link.  Each
run of lines from a ``>>>`` prompt to the next blank line is fenced as a ``pycon`` code block.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """Wrap every doctest block of ``text`` (a ``>>>`` line up to the next blank line) in a ``pycon`` fence;
    text already inside a fence is left alone."""
    out: list[str] = []
    in_block = in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if not in_fence and not in_block and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            in_block = True
        elif in_block and not stripped:
            out.append(f"{indent}```")
            in_block = False
        out.append(line)
    if in_block:
        out.append(f"{indent}```")
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fence the doctest blocks of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
