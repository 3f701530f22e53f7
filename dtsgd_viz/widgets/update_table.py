"""The numbers of one update, per run, as a table beside a ``PathExplorer`` (the app
shows it right of the step-through figure): the loss before the update and the lengths
of its terms, from the recorded gradient and velocities (``update_geometry.decompose_update``,
the terms the close-ups draw as arrows) and of the recorded step itself.

``update_rows`` is pure (recordings in, rows out); ``update_table_html`` writes them
in the look of ``CompareWidget``'s results table.
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..views.core import style
from ..views.paths.geometry import rule_name, step_index
from ..views.update import geometry as upd

if TYPE_CHECKING:
    from ..recording.recording import Recording

__all__ = ["UpdateRow", "update_rows", "update_table_html"]


@dataclasses.dataclass(frozen=True)
class UpdateRow:
    """One run's update: ``loss`` before it (None: not recorded), the lengths of its
    velocity term (``μ·v_prev`` classical, ``μ·v_new`` Nesterov; None for plain SGD),
    of ``−lr·g`` and of the recorded step ``p_new − p``."""

    name: str
    loss: float | None
    velocity_term: float | None
    gradient_term: float
    step: float


def update_rows(recordings: Mapping[str, Recording], update: int, name: str = "w") -> tuple[UpdateRow, ...]:
    """One row per recording at ``update`` (as ``recording.steps`` counts)."""
    rows = []
    for key, rec in recordings.items():
        i = step_index(rec.steps, update)
        terms = upd.decompose_update(rec, name, i)
        vec = dict(terms.terms)
        velocity = vec.get("momentum", vec.get("lookahead"))
        loss = None if rec.loss is None else float(np.asarray(rec.loss, np.float64)[i])
        rows.append(
            UpdateRow(
                key,
                loss,
                None if velocity is None else float(np.linalg.norm(velocity)),
                float(np.linalg.norm(vec["gradient"])),
                float(np.linalg.norm(terms.total)),
            )
        )
    return tuple(rows)


# narrow enough to stand beside the explorer's figure on the app's 1300 px page
COLUMNS = (
    ("optimizer", "7.2em", "left"),
    ("loss before", "5.2em", "right"),
    ("|μ·v|", "4.6em", "right"),
    ("|−lr·g|", "4.6em", "right"),
    ("|step|", "4.6em", "right"),
)


def _num(x) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.3g}"


def update_table_html(rows: Sequence[UpdateRow], update: int, colors: Mapping[str, str] | None = None) -> str:
    """``rows`` (``update_rows``) as an HTML table under a one-line heading naming
    ``update``, with a footnote saying which velocity each rule's ``μ·v`` is."""
    colors = colors or style.optimizer_colors([r.name for r in rows])
    pad = "padding:3px 6px"
    cols = "".join(f"<col style='width:{w}'>" for _, w, _ in COLUMNS)
    heads = "".join(
        f"<th style='text-align:{a};{pad};vertical-align:bottom;line-height:1.3;"
        f"border-bottom:1px solid #888'>{html.escape(t)}</th>"
        for t, _, a in COLUMNS
    )
    body = []
    for r in rows:
        swatch = (
            f'<span style="display:inline-block;width:0.8em;height:0.8em;'
            f'background:{colors[r.name]};margin-right:0.4em"></span>'
        )
        cells = [_num(r.loss), _num(r.velocity_term), _num(r.gradient_term), _num(r.step)]
        body.append(
            f"<tr><td style='{pad};white-space:nowrap'>{swatch}{html.escape(rule_name(r.name))}</td>"
            + "".join(f"<td style='text-align:right;{pad}'>{c}</td>" for c in cells)
            + "</tr>"
        )
    width = "calc(" + " + ".join(w for _, w, _ in COLUMNS) + ")"
    note = (
        "|μ·v|: μ·v_prev for momentum, μ·v_new for Nesterov (tf-keras' form); "
        "|step| = |μ·v − lr·g|, the recorded change of the parameters; — : no such term"
    )
    return (
        f"<div style='font-size:85%;line-height:1.4'><b>Update {int(update)}, each run's terms</b>"
        f"<table style='border-collapse:collapse;table-layout:fixed;width:{width};"
        "font-variant-numeric:tabular-nums;margin-top:4px'>"
        f"<colgroup>{cols}</colgroup><thead><tr>{heads}</tr></thead><tbody>"
        + "".join(body)
        + f"</tbody></table><div style='color:#555;margin-top:6px;max-width:{width}'>"
        f"{html.escape(note)}</div></div>"
    )
