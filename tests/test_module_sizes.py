"""Module sizes: every module of the packages under 800 lines of code, every frontend module
under 400 (docstrings, comments and blank lines not counted; the generated ``*_pb2*`` modules
excepted).  A module past its limit has more than one role: split it by role."""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: The most lines of code a module may have, by folder (the longest matching prefix wins).
LIMITS = {"": 800, "mock_server/frontends/": 400}

_SKIPPED = frozenset(
    {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
)


def code_lines(source: str) -> int:
    """How many lines of ``source`` hold code: not blank, not only a comment, not part of a
    module, class or function docstring."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _SKIPPED or token.type == tokenize.ENDMARKER:
            continue
        lines.update(n for n in range(token.start[0], token.end[0] + 1) if n not in docstrings)
    return len(lines)


def _modules() -> list[str]:
    found = []
    for package in ("mock_server", "tritonclient", "shm"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "_pb2" in path.name or "models" in relative.parts:
                continue  # generated protobuf modules; the bundled model repository
            found.append(relative.as_posix())
    return found


def limit_of(module: str) -> int:
    """The size limit of ``module`` (a path relative to the repository)."""
    prefix = max((p for p in LIMITS if module.startswith(p)), key=len)
    return LIMITS[prefix]


@pytest.mark.parametrize("module", _modules())
def test_module_size(module: str) -> None:
    size = code_lines((ROOT / module).read_text(encoding="utf-8"))
    assert size <= limit_of(module), f"{module}: {size} lines of code"


def test_the_count_leaves_out_docstrings_comments_and_blank_lines() -> None:
    source = '''"""Module docstring,
two lines."""

import os  # a comment

# a comment line


def f(x):
    """Docstring."""
    text = """not a docstring:
    counted"""
    return (x +
            1)
'''
    # import os; def f; text = (2 lines); return (2 lines)
    assert code_lines(source) == 6
    assert limit_of("mock_server/frontends/http.py") == 400
    assert limit_of("mock_server/core/lifecycle.py") == 800
