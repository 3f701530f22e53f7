"""One update, three tensors: the parameter, its velocity slot and the gradient, side by
side with the same device blocks outlined::

    rec = dtsgd_viz.load_recording("model.npz")
    fig = dtsgd_viz.plot_update_shards(rec, "d1/kernel", step=20)   # update 20

A reader sees that the optimizer's slot is laid out exactly like its parameter (it is
created from it: the same blocks on the same devices), and that the gradient arrives in
that layout too: the mesh dims the layout leaves unused (usually the batch dim) hold
replicas, and a gradient computed from batch-sharded data is summed over them before the
update, so every replica holds the same reduced block.

A flat tensor (a kernel of few rows) is drawn in panels stacked one under another, each
as wide as the figure, its colour bar beside it; others side by side.

A separate function rather than an option of ``plot_shards``: that view follows one
kind over time (its norm lines, ``set_kind``), this one compares kinds at one update;
one function per question keeps both signatures and figures simple.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.diverging import diverging_text
from ..core.empty import check_not_empty
from ..core.figure import fit, headline, new_figure
from ..mesh.layout_geometry import copies_text
from ..text.fit import grow_to_fit, keep_inside
from .geometry import as_image, axis_labels, flagged_steps, settings_text, short_device_names, update_index
from .stats import STATS_ONLY_TEXT
from .tensor_panel import box_aspect, draw_tensor

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording import Recording
    from ...specs import LayoutSpec

__all__ = ["plot_update_shards", "update_captions", "magnitude_text"]

KIND_NAMES = {"param": "parameter", "velocity": "velocity (momentum slot)", "grad": "gradient"}


def update_captions(layout: LayoutSpec, update: int) -> dict[str, str]:
    """What each panel shows, for a variable laid out by ``layout`` (a ``LayoutSpec``),
    at optimizer update ``update``: ``{kind: caption}``.

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> print(update_captions(spec, 3)["grad"])
    gradient of update 3, the same layout;
    summed over 'batch' (2 devices) when the batch
    is split over it: 2 equal replicas of each block
    """
    specs = "[" + ", ".join(layout.sharding_specs) + "]"
    mesh = layout.mesh
    unused = [d for d in mesh.dim_names if d not in layout.sharding_specs and mesh.dim_size(d) > 1]
    copies = int(np.prod([mesh.dim_size(d) for d in unused])) if unused else 1
    if unused:
        over = " x ".join(f"'{d}'" for d in unused)
        reduced = (
            f"summed over {over} ({copies} devices) when the batch\nis split over "
            f"it: {copies} equal replicas of each block"
        )
    else:
        reduced = "every mesh dim cuts it:\none block per device, no replicas"
    return {
        "param": f"parameter after update {update}\nlaid out {specs}",
        "velocity": f"velocity slot after update {update}\nthe same layout: it follows its parameter",
        "grad": f"gradient of update {update}, the same layout;\n{reduced}",
    }


NOUNS = {"param": "parameter", "velocity": "velocity", "grad": "gradient"}


def magnitude_text(largest: dict) -> str | None:
    """The finding of one update's panels: how the largest magnitude of each kind
    (``largest``: ``{kind: max |x|}``, in panel order) compares with the first one's,
    as the colour bars show it; None when there is nothing to compare (one kind, or a
    magnitude that is 0 or not finite).

    >>> magnitude_text({"param": 0.5, "velocity": 0.005, "grad": 0.02})
    'velocity 100x and gradient 25x smaller than the parameter'
    >>> magnitude_text({"param": 0.5, "velocity": 0.4, "grad": 2.0})
    'velocity within 1.5x of the parameter, gradient 4x larger'
    """
    kinds = list(largest)
    ref = largest[kinds[0]] if kinds else 0.0
    values = [largest[k] for k in kinds]
    if len(kinds) < 2 or not all(np.isfinite(v) and v > 0 for v in values):
        return None
    from .stats import times_text

    rel = [(NOUNS[k], ref / largest[k]) for k in kinds[1:]]
    way = {("smaller" if f >= 1.5 else "larger" if f <= 1 / 1.5 else "within") for _, f in rel}
    than = f"the {NOUNS[kinds[0]]}"
    if len(way) == 1 and "within" not in way:
        items = " and ".join(f"{n} {times_text(max(f, 1 / f))}" for n, f in rel)
        return f"{items} {way.pop()} than {than}"
    out = []
    for j, (n, f) in enumerate(rel):
        if 1 / 1.5 < f < 1.5:
            out.append(f"{n} within 1.5x of {than}" if j == 0 else f"{n} within 1.5x")
        else:
            word = "smaller" if f > 1 else "larger"
            out.append(f"{n} {times_text(max(f, 1 / f))} {word}" + (f" than {than}" if j == 0 else ""))
    return ", ".join(out)


def _shown_kinds(recording, kinds) -> list[str]:
    """The kinds of ``kinds`` the recording holds, in order; raises for unknown kinds or
    when none was recorded."""
    unknown = [k for k in kinds if k not in KIND_NAMES]
    if unknown or not kinds:
        raise ValueError(f"kinds must be some of {list(KIND_NAMES)}. Received: {list(kinds)}.")
    shown = [k for k in kinds if k in recording.kinds]
    if not shown:
        raise ValueError(f"None of the kinds {list(kinds)} was recorded (Recorder kinds={list(recording.kinds)}).")
    return shown


STACKED_HEIGHT = 1.4  # inches: a stacked panel's heatmap
STACKED_EXTRA = 1.15  # inches a stacked panel takes beside its heatmap (caption, chips, ticks)
STACKED_TITLE_WIDTH = 0.85  # of the figure's width: a stacked panel's title (no colour bar)


def stacked(shape: Sequence[int]) -> bool:
    """Whether the panels of a tensor of ``shape`` stand one under another: a flat one,
    whose side-by-side panels would be strips a third of the width.

    >>> stacked((4, 16)), stacked((8, 8))
    (True, False)
    """
    aspect = box_aspect(shape)
    return aspect is not None and aspect < 0.7


def _figure_size(shape, panels: int) -> tuple[float, float]:
    if stacked(shape):  # the headline, then each panel's heatmap and its extras
        return (style.WIDTH, 0.9 + panels * (STACKED_HEIGHT + STACKED_EXTRA))
    return _side_size(shape, panels)


def _side_size(shape, panels: int) -> tuple[float, float]:
    """``style.WIDTH`` wide (a panel ``WIDTH / 3`` for fewer than three), as tall as the
    panels' aspect needs."""
    rows, cols = (1, shape[0]) if len(shape) == 1 else (int(np.prod(shape[:-1])), shape[-1])
    aspect = min(max(rows / cols, 0.15), 1.6)  # wide tensors: a short figure
    width = style.WIDTH * max(panels, 2) / 3
    return (width, max(3.6, 2.9 + 2.5 * aspect))


def _suptitle(recording, name, layout, index, kinds, shown, note, stats_only, largest=None):
    """The figure's title ``(finding, settings)``: how the panels' magnitudes compare
    (``magnitude_text`` of ``largest``) in their shared block layout, else that they
    share it; the run's settings, the layout note (once for every panel: under each, it
    ran across its neighbours), what is missing."""
    missing = [k for k in kinds if k not in shown]
    subject = f"{name!r} at update {int(recording.steps[index])}"
    compared = magnitude_text(largest) if largest else None
    if index in flagged_steps(recording, name)[1]:
        subject += " (replicas disagree)"
    if compared:
        head = f"{subject}: {compared}, in the same blocks"
        if "\n" in fit(head, style.WIDTH * 72, style.SUPTITLE_SIZE, bold=True):
            head = f"{subject}:\n{compared}, in the same blocks"
    else:
        head = f"{subject}: {', '.join(KIND_NAMES[k] for k in shown)} share one block layout"
    diverging = diverging_text(recording)
    if diverging:  # said on every picture of the run, on a line of its own
        head += "\n" + diverging[:1].upper() + diverging[1:]
    roles = copies_text(layout).replace("copies", "replicas").replace("copy", "replica")
    lines = [head, f"{settings_text(recording, index)}  ·  {roles}"]
    if note:
        lines.append(note)
    if missing:
        lines.append(f"not recorded: {', '.join(missing)} (Recorder kinds={list(recording.kinds)})")
    if stats_only:
        lines.append(STATS_ONLY_TEXT)
    return lines[0], "\n".join(lines[1:])


def _fit_labels(fig, panels, n_shown) -> None:
    """Fit the block labels to the settled layout; name the blocks none could label."""
    fig.draw_without_rendering()  # settle the layout before measuring labels
    renderer = fig.canvas.get_renderer()
    for panel in panels.values():
        panel.fit_labels(renderer)
    unlabelled = next(iter(panels.values())).unlabelled_text()  # the same blocks in each
    if unlabelled:
        from ..core.figure import headline_texts

        finding, settings = headline_texts(fig)
        for old in [a for a in fig.artists if a.get_gid() == "subtitle"]:
            old.remove()
        headline(fig, finding, f"{settings}\n{unlabelled}")
        fig.draw_without_rendering()


def plot_update_shards(
    recording: Recording,
    name: str,
    step: int | None = None,
    *,
    kinds: Sequence[str] = ("param", "velocity", "grad"),
    figsize: tuple[float, float] | None = None,
) -> Figure:
    """The parameter, velocity and gradient of ``name`` at optimizer update ``step`` (as
    ``recording.steps`` counts; -1..-n count back from the last; None: the last), side by side, each with its own
    symmetric colour scale and the same device blocks outlined and labelled in their
    block colours. The title compares the kinds' largest magnitudes (the colour bars'
    limits: "velocity 100x and gradient 25x smaller than the parameter, in the same
    blocks"). Kinds the recording lacks are left out (the title says which). A
    ``Recorder(mode="stats")`` recording has no values: its panels show the blocks.
    Returns the ``Figure``.

    >>> import dtsgd_viz
    >>> r = dtsgd_viz.run(dtsgd_viz.surfaces.ShardedQuadratic(), {"m": dict(learning_rate=0.5,
    ...                   momentum=0.9)}, steps=5)["m"]                        # doctest: +SKIP
    >>> fig = dtsgd_viz.plot_update_shards(r, "w", step=3)                    # doctest: +SKIP
    """
    check_not_empty(recording)
    index = update_index(recording, step)
    geometry = recording.geometry(name)  # unknown variable: the Recording's own error
    shown = _shown_kinds(recording, kinds)
    stats_only = getattr(recording, "mode", "full") == "stats"
    size = _figure_size(geometry.global_shape, len(shown))
    stack = stacked(geometry.global_shape)
    fig = new_figure(size if figsize is None else figsize, wspace=0.02)
    axes = fig.subplots(len(shown), 1, squeeze=False)[:, 0] if stack else fig.subplots(1, len(shown), squeeze=False)[0]
    names = short_device_names(recording.shard_devices(name))
    captions = update_captions(geometry.layout, int(recording.steps[index]))
    xlabel, ylabel, note = axis_labels(geometry.layout)
    fig._dtsgd_panels = panels = {}  # pyright: ignore[reportAttributeAccessIssue]  # our own attribute: tests read it
    largest = {}  # each kind's max |x|: the colour bars' limits, compared in the title
    for ax, kind in zip(axes, shown):
        image = None
        if not stats_only:
            values = recording.global_values(name, kind)[index]
            image = as_image(np.asarray(values, np.float32 if values.dtype.name == "bfloat16" else values.dtype))
            data = np.asarray(values, np.float64)
            largest[kind] = float(np.abs(data).max()) if np.isfinite(data).all() else np.nan
        panels[kind] = panel = draw_tensor(
            ax,
            geometry,
            names,
            image,
            colorbar_label=f"{kind} value",
            colorbar=True if stack else "below",
            aspect="fill" if stack else None,
        )
        caption = captions[kind]
        if stack:  # the panel's title, at title size, over the heatmap's width
            head, _, rest = caption.partition("\n")
            caption = fit(
                head + (" " if head.endswith(";") else " · ") + rest.replace("\n", " "),
                STACKED_TITLE_WIDTH * size[0] * 72,
                style.TITLE_SIZE,
            )
        ax.set_title(
            caption, fontsize=style.TITLE_SIZE if stack else style.NOTE_SIZE, loc="center", pad=panel.title_pad()
        )
        last = ax is axes[-1] or not stack  # stacked: one x label, under the last
        ax.set_xlabel(xlabel if last else "", fontsize=style.TICK_SIZE)
        ax.set_ylabel(ylabel if (stack or ax is axes[0]) else "", fontsize=style.TICK_SIZE)
        ax.tick_params(labelsize=style.TICK_SIZE)
    headline(fig, *_suptitle(recording, name, geometry.layout, index, kinds, shown, note, stats_only, largest))
    _fit_labels(fig, panels, len(shown))
    keep_inside(fig, [ax.title for ax in axes])  # a caption wider than its panel's room
    grow_to_fit(fig)  # the room the broken captions take
    return fig
