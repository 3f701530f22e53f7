"""What each update moves between devices, drawn on the mesh.

One panel per set of mesh dims the traffic runs along: the devices as circles on the
mesh grid (a mesh of rank 3 or more as facets), a line joining the devices of each
group that reduces together (a loop when a group spans several dims; one colour per
mesh dim), the bytes each device contributes per update, and what they serve. The
geometry is computed by ``communication_geometry`` (tested numerically); this module
only draws it::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
    >>> from dtsgd_viz.views import plot_communication
    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> plan = communication_plan({
    ...     "kernel": ((24, 64), "float32", LayoutSpec(("unsharded", "model"), mesh)),
    ...     "bias": ((64,), "float32", LayoutSpec(("model",), mesh))})
    >>> fig = plot_communication(plan)
    >>> fig.texts[0].get_text()
    'Each update all-reduces 1.56 KiB of gradient per device along batch'
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle

from ...recording.communication import CommunicationPlan, CommunicationReport
from ..core.style import SUBTITLE_COLOR
from .communication_geometry import FONT, NODE_RADIUS, CommunicationPicture, DimPanel, communication_geometry


def plot_communication(
    report_or_plan: CommunicationReport | CommunicationPlan,
    *,
    fig: Figure | None = None,
    max_items: int = 3,
    title: str | None = None,
) -> Figure:
    """The collectives of one update on the mesh: a ``CommunicationReport``
    (``dtsgd_viz.communication(step)``: measured) or a ``CommunicationPlan``
    (``dtsgd_viz.communication_plan`` or ``communication_plan(memory_plan)``: the gradient
    all-reduces predicted from layouts). Each panel lists what the bytes serve, the
    ``max_items`` largest gradients by name and ``+N more``. ``title`` replaces the
    finding. Draws into ``fig`` (cleared and resized) when given; returns the Figure."""
    pic = communication_geometry(report_or_plan, max_items=max_items, title=title)
    if fig is None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        fig = Figure(figsize=pic.figsize, dpi=100)
        FigureCanvasAgg(fig)
    else:
        fig.clear()
        fig.set_size_inches(*pic.figsize)
    fw, fh = pic.figsize
    # the house headline: the finding centred and bold, the settings centred under it
    fig.suptitle(
        pic.title,
        x=0.5,
        y=1 - 0.15 / fh,
        ha="center",
        va="top",
        fontsize=FONT["title"],
        fontweight="bold",
        linespacing=1.3,
        gid="title",
    )
    lines = pic.title.count("\n") + 1
    fig.text(
        0.5,
        1 - (0.2 + 0.24 * lines) / fh,
        pic.subtitle,
        ha="center",
        va="top",
        fontsize=FONT["subtitle"],
        color=SUBTITLE_COLOR,
        linespacing=1.35,
        gid="subtitle",
    )
    for k, panel in enumerate(pic.panels):
        _draw_panel(fig, pic, panel, k)
    fig.text(
        0.15 / fw,
        0.1 / fh,
        pic.note,
        ha="left",
        va="bottom",
        fontsize=FONT["note"],
        color="#555555",
        style="italic",
        linespacing=1.3,
        gid="note",
    )
    return fig


def _draw_panel(fig, pic: CommunicationPicture, panel: DimPanel, k: int):
    fw, fh = pic.figsize
    left, bottom, w, h = panel.box
    ax = fig.add_axes((left / fw, bottom / fh, w / fw, h / fh), gid=f"panel-{k}")
    for f in pic.facets:
        x, y, fw_, fh_ = f.rect
        ax.add_patch(
            Rectangle(
                (x - 0.08, y - 0.08),
                fw_ + 0.16,
                fh_ + 0.16,
                facecolor="#F3F3F3",
                edgecolor="#CCCCCC",
                linewidth=0.8,
                zorder=0,
                gid="facet",
            )
        )
        ax.text(
            x + fw_ / 2,
            y - 0.18,
            f.title,
            ha="center",
            va="bottom",
            fontsize=FONT["ticks"],
            color="#333333",
            gid="facet-title",
        )
    for i, g in enumerate(panel.groups):
        xs, ys = zip(*g.path)
        ax.plot(
            xs,
            ys,
            color=panel.color,
            linewidth=3.2,
            solid_capstyle="round",
            solid_joinstyle="round",
            alpha=0.85,
            zorder=2,
            gid=f"group-{k}-{i}",
        )
    members = panel.devices
    for d, (x, y) in enumerate(pic.centres):
        on = d in members
        ax.add_patch(
            Circle(
                (x, y),
                NODE_RADIUS,
                facecolor=panel.color if on else "white",
                edgecolor=panel.color if on else "#999999",
                linewidth=1.2,
                zorder=3,
                gid=f"device-{d}",
            )
        )
        if pic.node_labels[d]:
            ax.text(
                x,
                y,
                pic.node_labels[d],
                ha="center",
                va="center",
                fontsize=FONT["node"],
                color="white" if on else "#555555",
                fontweight="bold",
                zorder=4,
                gid=f"device-label-{d}",
            )
    ax.set_xlim(*pic.xlim)
    ax.set_ylim(*pic.ylim)
    ax.set_xticks([t for t, _ in pic.xticks], [s for _, s in pic.xticks])
    ax.set_yticks([t for t, _ in pic.yticks], [s for _, s in pic.yticks])
    ax.tick_params(length=0, labelsize=FONT["ticks"], pad=2)
    ax.set_xlabel(pic.xlabel, fontsize=FONT["ticks"], labelpad=2)
    short = len(pic.ylabel) <= 3  # a turned "y" reads as a chevron
    ax.set_ylabel(
        pic.ylabel,
        fontsize=FONT["ticks"],
        labelpad=4 if short else 2,
        rotation=0 if short else 90,
        va="center",
        ha="right" if short else "center",
    )
    for spine in ax.spines.values():
        spine.set_visible(False)
    fig.text(
        panel.text_left / fw,
        (bottom + h + 0.12) / fh,
        panel.title,
        ha="left",
        va="bottom",
        fontsize=FONT["panel"],
        fontweight="bold",
        color=panel.color,
        gid=f"panel-title-{k}",
    )
    fig.text(
        panel.text_xy[0] / fw,
        panel.text_xy[1] / fh,
        "\n".join(panel.lines),
        ha="left",
        va="top",
        fontsize=FONT["lines"],
        color="#222222",
        linespacing=1.35,
        gid=f"serves-{k}",
    )
