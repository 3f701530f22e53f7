"""The API reference documents every field of ``Recording`` with a text of its own.

mkdocstrings (griffe, static analysis) takes an attribute's docstring from the string
literal right after it, and leaves an attribute without one out of the page
(``show_if_no_docstring`` is off): a field with no string after it has no entry, and a
field whose text sits after another field's shows as that field's."""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "dtsgd_viz" / "recording" / "recording.py"


def _class(name):
    tree = ast.parse(SOURCE.read_text())
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)


def _field_docstrings(cls):
    """``{field: the string literal right after it, or None}`` for each annotated field."""
    body, out = cls.body, {}
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            after = body[i + 1] if i + 1 < len(body) else None
            text = (
                after.value.value
                if isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
                else None
            )
            out[node.target.id] = text
    return out


def test_each_recording_field_is_followed_by_its_own_docstring():
    docs = _field_docstrings(_class("Recording"))
    assert {"mesh", "records", "steps", "mode", "part"} <= set(docs)
    assert [f for f, text in docs.items() if not (text and text.strip())] == []
    texts = [" ".join(text.split()) for text in docs.values()]
    assert len(set(texts)) == len(texts)  # no two fields share one


@pytest.mark.slow
def test_the_generated_reference_gives_each_field_its_text():
    """What mkdocstrings renders: griffe reads ``dtsgd_viz.Recording`` as the site does
    (with docs/griffe_ext.py, which follows the lazily imported names)."""
    griffe = pytest.importorskip("griffe")
    extensions = griffe.load_extensions(f"{ROOT / 'docs' / 'griffe_ext.py'}:DtsgdViz")
    pkg = griffe.load("dtsgd_viz", search_paths=[str(ROOT)], extensions=extensions, resolve_aliases=False)
    recording = pkg["Recording"].final_target
    assert recording.path == "dtsgd_viz.recording.recording.Recording"
    fields = _field_docstrings(_class("Recording"))
    documented = {
        name: " ".join(recording.members[name].docstring.value.split())
        for name in fields
        if recording.members[name].docstring
    }
    assert sorted(documented) == sorted(fields)
    assert documented == {f: " ".join(text.split()) for f, text in fields.items()}
