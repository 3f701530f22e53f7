"""``TextTable``: a plain-text table (it *is* the ``str``) that Jupyter shows as an HTML
table; the memory plan and the layout tables print through it."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, Self


class TextTable(str):
    """A plain-text table (it *is* the ``str``) that Jupyter shows as an HTML table."""

    _parts: tuple[
        tuple[str, ...], tuple[str, ...], list[tuple[str, ...]], tuple[str, ...], Mapping[tuple[int, int], str]
    ]

    def __new__(
        cls,
        header: Sequence[str],
        columns: Sequence[str],
        rows: Sequence[Sequence[object]],
        footer: Sequence[str] = (),
        html_cells: Mapping[tuple[int, int], str] | None = None,
    ) -> Self:
        widths = [max(len(str(c)), *(len(str(r[i])) for r in rows)) for i, c in enumerate(columns)]
        lines = [*header, "  ".join(str(c).ljust(w) for c, w in zip(columns, widths)).rstrip()]
        lines += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
        self = super().__new__(cls, "\n".join([*lines, *footer]))
        self._parts = (
            tuple(header),
            tuple(columns),
            [tuple(map(str, r)) for r in rows],
            tuple(footer),
            html_cells or {},
        )
        return self

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        header, columns, rows, footer, cells = self._parts
        esc = html.escape
        out = [
            f"<div><p style='font-family:monospace'>{'<br>'.join(map(esc, header))}</p>",
            "<table><tr>" + "".join(f"<th style='text-align:left'>{esc(c)}</th>" for c in columns) + "</tr>",
        ]
        for i, row in enumerate(rows):
            tds = [cells.get((i, j), esc(v)) for j, v in enumerate(row)]
            out.append(
                "<tr>" + "".join(f"<td style='text-align:left;font-family:monospace'>{t}</td>" for t in tds) + "</tr>"
            )
        out.append("</table>" + "".join(f"<p>{esc(f)}</p>" for f in footer) + "</div>")
        return "\n".join(out)
