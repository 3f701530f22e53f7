"""A griffe extension for the API reference (``mkdocs.yml``: the mkdocstrings option
``extensions``).

- ``dtsgd_viz`` imports its heavy names on first use (``_LAZY`` and ``__getattr__`` in
  ``dtsgd_viz/__init__.py``), which static analysis cannot follow: each of them is made
  an alias of the object it names, so ``dtsgd_viz.make_mesh`` is documented (and
  linked) under its public name, not ``dtsgd_viz.dtensor.devices.make_mesh``.
- The docstrings' runnable examples (``>>>`` lines and their output, as doctest reads
  them) become fenced ``pycon`` code blocks: Markdown would otherwise run them into a
  paragraph and read ``x[0][:2]`` as a link.
"""

from __future__ import annotations

import ast

import griffe


def fence_doctests(text: str) -> str:
    """Fence every run of doctest lines that starts a line (``>>>`` at the left margin,
    through the next blank line); indented blocks already render as code."""
    out, block = [], False
    for line in text.splitlines():
        if not block and line.startswith(">>>"):
            out.append("```pycon")
            block = True
        elif block and not line.strip():
            out.append("```")
            block = False
        out.append(line)
    if block:
        out.append("```")
    return "\n".join(out)


class DtsgdViz(griffe.Extension):
    def on_instance(self, *, obj, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)

    def on_package(self, *, pkg, **kwargs) -> None:
        if pkg.name != "dtsgd_viz" or "_LAZY" not in pkg.members:
            return
        lazy = ast.literal_eval(str(pkg.members["_LAZY"].value))
        for name, module in lazy.items():
            pkg.set_member(name, griffe.Alias(name, f"dtsgd_viz.{module}.{name}", parent=pkg))
        # modules reached as attributes (dtsgd_viz.reference is dtsgd_viz.theory.reference)
        for name, module in ast.literal_eval(str(pkg.members["_MODULES"].value)).items():
            if name != module:
                pkg.set_member(name, griffe.Alias(name, f"dtsgd_viz.{module}", parent=pkg))
