"""What each update moves between devices, drawn on the mesh.

One panel per set of mesh dims the traffic runs along: the devices as circles on the
mesh grid, a line joining the devices of each group that reduces together (a loop when
a group spans rows and columns; one colour per mesh dim) and, under it, what the bytes
serve. ``communication_geometry`` computes the geometry (tested numerically); this module
only draws it::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
    >>> from dtsgd_viz.views import plot_communication
    >>> from dtsgd_viz.views.core.figure import headline_texts
    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> plan = communication_plan({
    ...     "kernel": ((24, 64), "float32", LayoutSpec(("unsharded", "model"), mesh)),
    ...     "bias": ((64,), "float32", LayoutSpec(("model",), mesh))})
    >>> headline_texts(plot_communication(plan))[0]
    'Each update all-reduces 1.56 KiB of gradient per device along batch'
"""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Circle

from ...recording.communication import CommunicationPlan, CommunicationReport
from ..core.figure import headline, new_figure
from ..core.style import NOTE_SIZE, TICK_SIZE, TITLE_SIZE
from .communication_geometry import NODE_RADIUS, CommunicationPicture, DimPanel, communication_geometry


def plot_communication(
    report_or_plan: CommunicationReport | CommunicationPlan,
    *,
    fig: Figure | None = None,
    max_items: int = 3,
    title: str | None = None,
) -> Figure:
    """The collectives of one update on the mesh: a ``CommunicationReport``
    (``dtsgd_viz.communication(step)``: measured) or a ``CommunicationPlan``
    (``dtsgd_viz.communication_plan``: the gradient all-reduces predicted from layouts;
    activation traffic is not predictable from layouts, measure it). The title is the
    finding (``title`` replaces it), the subtitle the settings; under each panel, what
    its bytes serve, the ``max_items`` largest gradients by name and ``+N more``. Draws
    into ``fig`` (cleared and resized) when given; returns the Figure."""
    pic = communication_geometry(report_or_plan, max_items=max_items, title=title)
    if fig is None:
        fig = new_figure(pic.figsize)
    else:
        fig.clear()
        fig.set_size_inches(*pic.figsize)
        fig.set_layout_engine("constrained")
    headline(fig, pic.title, pic.subtitle)
    fig.texts[0].set_gid("title")  # the suptitle, the figure's first text
    axes = fig.subplots(1, len(pic.panels), squeeze=False)[0]
    for k, (ax, panel) in enumerate(zip(axes, pic.panels)):
        ax.set_gid(f"panel-{k}")
        _draw_panel(ax, pic, panel, k)
    fig.supxlabel(pic.note, fontsize=NOTE_SIZE, color="#555555", style="italic", gid="note")
    return fig


def _draw_panel(ax, pic: CommunicationPicture, panel: DimPanel, k: int) -> None:
    for i, g in enumerate(panel.groups):
        xs, ys = zip(*g.path)
        ax.plot(
            xs, ys, color=panel.color, linewidth=4, solid_capstyle="round", alpha=0.85, zorder=2, gid=f"group-{k}-{i}"
        )
    for d, (x, y) in enumerate(pic.centres):
        on = d in panel.devices
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
                fontsize=9.5,
                fontweight="bold",
                color="white" if on else "#555555",
                zorder=4,
                gid=f"device-label-{d}",
            )
    ax.set_xlim(*pic.xlim)
    ax.set_ylim(*pic.ylim)
    ax.set_aspect("equal")
    mesh = pic.mesh
    ax.set_xticks([i + 0.5 for i in range(mesh.dim_sizes[-1])], [str(i) for i in range(mesh.dim_sizes[-1])])
    ax.set_yticks([y for y, _ in pic.rows], [s for _, s in pic.rows])
    ax.tick_params(length=0, labelsize=TICK_SIZE, pad=2)
    # under the columns' name, what the bytes serve: one text, so the layout makes room for it
    label = ax.set_xlabel(
        "\n".join([f"mesh dim {mesh.dim_names[-1]}", *panel.lines]), loc="left", fontsize=TICK_SIZE, labelpad=2
    )
    label.set_linespacing(1.35)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(
        panel.title, fontsize=TITLE_SIZE, fontweight="bold", color=panel.color, loc="left", gid=f"panel-title-{k}"
    )
