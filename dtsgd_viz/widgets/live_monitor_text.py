"""The words and the update axis of ``LiveMonitor``'s figure: its headline (the finding
of the run so far, the settings read from the store's header) and its x axis, which
starts at update 0 (or at the first update a resumed run recorded).

Pure functions of the store's header and the polled arrays, tested without a store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..views.core import style
from ..views.shards.findings import times_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["loss_text", "monitor_finding", "monitor_settings", "set_update_axis", "LIVE_MONITOR_HEADLINED_SIZE"]

LIVE_MONITOR_HEADLINED_SIZE = (style.WIDTH, style.LIVE_MONITOR_SIZE[1] + 0.8)
"""``style.LIVE_MONITOR_SIZE`` and room for the headline above the two panels."""


def loss_text(steps: np.ndarray | Sequence[float], loss: ArrayLike) -> str:
    """By how much the loss changed over the run so far, in the updates that changed it:
    the loss recorded at update ``steps[i]`` is the one before it (the loss after
    ``steps[i] - 1`` updates), so from the first to the last recorded loss the parameters
    made updates ``steps[0]`` to ``steps[-1] - 1``.

    The span is written as ``readout`` writes the recorded updates ("80 updates recorded
    (1-80; loss taken before each)"): the losses of updates 1-80 span updates 1-79.

    >>> loss_text([1, 2, 80], [1.0, 0.5, 0.03])
    'loss falls 33x over updates 1-79'
    >>> loss_text([1001, 1080], [1.0, 0.5])
    'loss falls 2x over updates 1001-1079'
    >>> loss_text([4, 5], [1.0, 0.5])
    'loss falls 2x over update 4'
    """
    v = np.asarray(loss, np.float64)
    ok = np.flatnonzero(np.isfinite(v))
    if len(ok) < 2 or v[ok[0]] <= 0 or v[ok[-1]] <= 0:
        return "loss"
    f = float(v[ok[-1]] / v[ok[0]])
    a, b = int(steps[ok[0]]), int(steps[ok[-1]]) - 1  # the first and the last update the losses span
    span = f"over update {a}" if a == b else f"over updates {a}-{b}"
    k = max(f, 1 / f)
    return (
        f"loss stays within 1.5x {span}" if k < 1.5 else f"loss {'grows' if f > 1 else 'falls'} {times_text(k)} {span}"
    )


def monitor_finding(
    steps: np.ndarray | Sequence[float],
    loss: ArrayLike,
    norms: ArrayLike,
    kind: str | None,
    blocks: Sequence[str],
    who: str | None = None,
) -> str:
    """The headline's finding: the loss's change and that of the ``kind``'s block norms
    (``change_text`` of the shard views), the block named there left out (the panel's
    lines and names show it); on two lines, broken at the ";", when one is too long.
    ``who`` names the blocks the median is over ("client 0's 4 blocks": a client of a
    multi-client run holds only some of them, so its median differs from the run's).

    >>> print(monitor_finding([1, 2, 3], [1.0, 0.5, 0.1], np.array([[1.0], [9.0], [3.0]]),
    ...                       "velocity", ["CPU:0"]))
    Loss falls 10x over updates 1-2;
    the velocity's block norm rises 9x to a peak at update 2, then falls 3x
    """
    from ..views.shards.view import change_text

    head = loss_text(steps, loss)
    head = head[0].upper() + head[1:]
    if not len(blocks) or np.asarray(norms).shape[0] < 2:
        return head
    norm = change_text(np.asarray(norms), np.asarray(steps), list(blocks)).split("; ")[0]
    if "block norm " not in norm:
        return head
    subject = f"the {kind}'s {norm}"
    if who and norm.startswith("median block norm "):
        subject = f"the median norm of {who} {norm[len('median block norm ') :]}"
    return balanced(f"{head}; {subject}", LIVE_MONITOR_HEADLINED_SIZE[0] * 72)


def balanced(text: str, width: float, size: float = style.SUPTITLE_SIZE) -> str:
    r"""``text`` on one line when it fits ``width`` points (bold, at ``size``), else on
    two: broken at its "; " when both halves fit, else between the words where the
    longer line is shortest, never next to a number (never a word or two left alone on
    a third line).

    >>> balanced("Loss falls 37x; the median rises 6x to a peak, then falls 11x", 300)
    'Loss falls 37x; the median\nrises 6x to a peak, then falls 11x'
    >>> balanced("Loss falls 37x; the median falls 11x to update 80", 300)
    'Loss falls 37x;\nthe median falls 11x to update 80'
    """
    from ..views.core.figure import fit

    def fits(line):
        return "\n" not in fit(line, width, size, bold=True)

    if fits(text):
        return text
    head, _, rest = text.partition("; ")
    if rest and fits(head + ";") and fits(rest):
        return f"{head};\n{rest}"
    words = text.split(" ")
    # never beside a number: "client 0's 4 blocks", "update 13" stay on one line
    cuts = [
        (" ".join(words[:k]), " ".join(words[k:]))
        for k in range(1, len(words))
        if not (words[k][:1].isdigit() or words[k - 1][:1].isdigit())
    ]
    good = [c for c in cuts if fits(c[0]) and fits(c[1])]
    if not good:
        return text  # the headline wraps it
    return "\n".join(min(good, key=lambda c: max(len(c[0]), len(c[1]))))


def monitor_settings(header: Mapping[str, Any], learning_rate: float | None = None) -> str:
    """The settings line, from a store's ``header`` (and the last ``learning_rate``
    recorded): the optimizer, the mesh and, for a part of a multi-client run, which
    client the monitor follows.

    >>> h = {"mesh": {"dim_names": ["x", "y"], "dim_sizes": [2, 4]}, "momentum": 0.9,
    ...      "nesterov": True, "part": {"client_id": 0, "num_clients": 2,
    ...                                 "devices": [0, 1, 2, 3]}}
    >>> monitor_settings(h, 0.1)
    'SGD lr=0.1, momentum=0.9, Nesterov  ·  mesh x=2, y=4 (8 devices)  ·  client 0 of 2 (devices 0-3)'
    """
    momentum = float(header.get("momentum", 0.0))
    rule = ", Nesterov" if header.get("nesterov") else ", heavy-ball" if momentum else ""
    lr = "" if learning_rate is None or not np.isfinite(learning_rate) else f" lr={float(learning_rate):g},"
    parts = [f"SGD{lr} momentum={momentum:g}{rule}"]
    mesh = header.get("mesh")
    if mesh:
        sizes = [int(s) for s in mesh["dim_sizes"]]
        dims = ", ".join(f"{n}={s}" for n, s in zip(mesh["dim_names"], sizes))
        parts.append(f"mesh {dims} ({int(np.prod(sizes))} devices)")
    part = header.get("part")
    if part:
        devices = [int(d) for d in part["devices"]]
        held = (
            f"{devices[0]}-{devices[-1]}"
            if devices == list(range(devices[0], devices[-1] + 1))
            else ", ".join(map(str, devices))
        )
        parts.append(f"client {part['client_id']} of {part['num_clients']} (devices {held})")
    return "  ·  ".join(parts)


def set_update_axis(ax: Axes, steps: ArrayLike) -> None:
    """The x axis of the updates ``steps``: from 0 (a run from its start: ticks at
    round numbers from 0) or, for a run resumed late, from its first update, to the
    last update (where the block names stand)."""
    from matplotlib.ticker import MaxNLocator

    x = np.asarray(steps)
    if not len(x):
        return
    lo, hi = float(x[0]), float(x[-1])
    left = 0.0 if lo <= 0.1 * max(hi, 1.0) else lo
    ax.set_xlim(left, hi if hi > left else left + 1)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, steps=[1, 2, 2.5, 5, 10]))
