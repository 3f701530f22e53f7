"""The demo report: the demo's recordings drawn as figures, a GIF and text, gathered in
a folder with an ``index.html`` that shows them (what ``dtsgd-viz demo --out DIR`` writes).

    recs = dtsgd_viz.run(surfaces.RotatedQuadratic(), {"momentum": ..., "nesterov": ...}, 40)
    report = write_report("demo-out", {"momentum": rec_m, "nesterov": rec_n}, recs,
                          surfaces.RotatedQuadratic(), name="w")
    report.index            # 'demo-out/index.html'
    report.paths()          # every file written, index last

Each figure comes from a small function (``layout_figure``, ``shard_figure``,
``path_figure``, ``update_figure``) that returns the ``Figure`` the file holds, so a test can rebuild
it and check its data. Nothing here prints: progress goes to an optional callback.
"""

from __future__ import annotations

import dataclasses
import html
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..recording import Recording
    from ..theory.surfaces import Surface

__all__ = [
    "Item",
    "Report",
    "arrow_step",
    "shard_steps",
    "layout_figure",
    "shard_figure",
    "path_figure",
    "update_figure",
    "index_html",
    "write_report",
]

INDEX = "index.html"
_DPIS = {"PNG_DPI": "DPI", "GIF_DPI": "GIF_DPI"}


def __getattr__(name: str) -> int:
    """``PNG_DPI`` and ``GIF_DPI``: the one scale's (``views.core.style.DPI``, figures at most
    ~950 px wide, and ``GIF_DPI``), read when asked so importing this module stays light."""
    if name in _DPIS:
        from ..views.core import style

        return getattr(style, _DPIS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


GIF_FRAMES = 20
# ms a frame (animate defaults to 250): each frame's two close-ups hold two to four
# labels, about a second's reading
GIF_INTERVAL = 900
PNG_PAD = 0.1  # inches of margin a side around what a PNG draws (as a notebook crops)


@dataclasses.dataclass(frozen=True)
class Item:
    """One file of the report: ``filename`` (relative to the report folder), its
    ``title`` and ``caption``, and ``kind`` (``"image"`` or ``"text"``)."""

    filename: str
    title: str
    caption: str
    kind: str = "image"


@dataclasses.dataclass(frozen=True)
class Report:
    """What ``write_report`` wrote: the folder, the items shown, and the index page."""

    directory: str
    items: tuple[Item, ...]

    @property
    def index(self) -> str:
        return os.path.join(self.directory, INDEX)

    def paths(self) -> list[str]:
        """Every file written, in the order the index shows them, the index last."""
        return [os.path.join(self.directory, i.filename) for i in self.items] + [self.index]


# ---- choices made from the data (pure) ------------------------------------------------


def _off_path(update) -> float:
    """How far the tip-to-tail arrows of ``update`` stray from the straight step they
    add up to: the largest distance of a joint between two arrows from that segment."""
    total = np.asarray(update.total, np.float64)
    joint, worst = np.zeros_like(total), 0.0
    for _, vec in update.terms[:-1]:
        joint = joint + vec
        t = float(np.clip(joint @ total / max(float(total @ total), 1e-300), 0.0, 1.0))
        worst = max(worst, float(np.linalg.norm(joint - t * total)))
    return worst


def arrow_step(recordings: Mapping[str, Recording], name: str = "w") -> int:
    """The recorded step index at which the update arrows say the most.

    The arrows of a step end where the path's next point is, so they are only seen
    where they leave the path: where the momentum (or look-ahead) term points away from
    the step actually taken and the gradient term pulls back. This picks the step whose
    arrows stray furthest from their path segments, summed over the configs. Steps whose
    update cannot be decomposed (missing kinds) are skipped; 0 if none can.
    """
    from ..views.update.geometry import decompose_update

    n = min(len(r) for r in recordings.values())
    best, best_score = 0, 0.0
    for i in range(n):
        try:
            score = sum(_off_path(decompose_update(r, name, i)) for r in recordings.values())
        except ValueError:
            continue
        if np.isfinite(score) and score > best_score:
            best, best_score = i, score
    return best


def shard_steps(n_steps: int, updates: Sequence[int] = (3, 10, 30)) -> list[int]:
    """Recorded step indices for the shard figures: ``updates`` (1-based), those past
    the end of a run of ``n_steps`` replaced by its last step, without repeats.

    >>> shard_steps(100), shard_steps(12), shard_steps(2)
    ([2, 9, 29], [2, 9, 11], [1])
    """
    return sorted({min(int(i), n_steps) - 1 for i in updates if i >= 1 and n_steps >= 1})


# ---- the figures -------------------------------------------------------------------------


def layout_figure(recording: Recording, name: str = "w") -> Figure:
    """``plot_layout`` of ``name`` as recorded."""
    from ..views.mesh.layout import plot_layout

    return plot_layout(recording, name=name)


def shard_figure(recording: Recording, name: str = "w", step: int = -1, kind: str = "velocity") -> Figure:
    """``plot_shards`` of ``name``'s ``kind`` at recorded step index ``step`` (an index
    into ``recording.steps``; ``plot_shards`` itself takes the update number)."""
    from ..views.shards.plot import plot_shards

    return plot_shards(recording, name, kind, int(recording.steps[step]))


def path_figure(
    recordings: Mapping[str, Recording], surface: Surface, step: int | None = None, name: str = "w"
) -> Figure:
    """``plot_paths`` of ``recordings`` on ``surface`` with arrows at recorded step index
    ``step`` (default: ``arrow_step``; ``plot_paths`` itself takes the update number)."""
    from ..views.paths.plot import plot_paths

    if step is None:
        step = arrow_step(recordings, name)
    update = int(next(iter(recordings.values())).steps[step])
    return plot_paths(recordings, surface, step=update, name=name)


def update_figure(
    recordings: Mapping[str, Recording], surface: Surface, step: int | None = None, name: str = "w"
) -> Figure:
    """``plot_update`` of ``recordings`` on ``surface``: the update at recorded step index
    ``step`` (default: ``arrow_step``, the one ``path_figure`` takes apart) up close."""
    from ..views.update.plot import plot_update

    if step is None:
        step = arrow_step(recordings, name)
    update = int(next(iter(recordings.values())).steps[step])
    return plot_update(recordings, surface, step=update, name=name)


# ---- the page ------------------------------------------------------------------------------


_CSS = """
body { font-family: system-ui, sans-serif; max-width: 1200px; margin: 2em auto; padding: 0 1em;
       color: #222; line-height: 1.45; }
figure { margin: 2em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { margin-top: 0.4em; color: #444; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.9em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
"""


def index_html(items: Sequence[Item], title: str, intro: str = "", texts: Mapping[str, str] | None = None) -> str:
    """A self-contained HTML page: a list of contents, then ``items`` in order, images
    with their captions, text items as preformatted blocks (content from
    ``texts[filename]``) with a link to the file. Every item's file is referenced by its
    relative name."""
    esc = html.escape
    texts = texts or {}
    out = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    if intro:
        out.append(f"<p>{esc(intro)}</p>")
    anchor = {i.filename: esc(i.filename.replace(".", "-"), quote=True) for i in items}
    out.append(
        "<ul>" + "".join(f"<li><a href='#{anchor[i.filename]}'>{esc(i.title)}</a></li>" for i in items) + "</ul>"
    )
    for item in items:
        src = esc(item.filename, quote=True)
        out.append(f"<h2 id='{anchor[item.filename]}'>{esc(item.title)}</h2>")
        if item.kind == "image":
            out.append(
                f"<figure><img src='{src}' alt='{esc(item.title, quote=True)}'>"
                f"<figcaption>{esc(item.caption)}</figcaption></figure>"
            )
        else:
            out.append(f"<p>{esc(item.caption)} (<a href='{src}'>{esc(item.filename)}</a>)</p>")
            if item.filename in texts:
                out.append(f"<pre>{esc(texts[item.filename])}</pre>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---- writing --------------------------------------------------------------------------------


def _check_recordings(what, recordings) -> dict:
    if not isinstance(recordings, Mapping) or not recordings:
        raise ValueError(f"{what} must be a non-empty dict {{config name: Recording}}. Received: {recordings!r}.")
    empty = [k for k, r in recordings.items() if len(r) == 0]
    if empty:
        raise ValueError(f"{what}: recording(s) {empty} have no steps; record at least one.")
    return dict(recordings)


class _Folder:
    """The report folder being written: each file written adds its ``Item`` (in the order
    the index shows them) and a text file's content to ``texts``."""

    def __init__(self, directory: str, progress: Callable[[str], None] | None):
        self.directory = directory
        self.say = progress or (lambda msg: None)
        self.items: list[Item] = []
        self.texts: dict[str, str] = {}

    def path(self, filename: str) -> str:
        return os.path.join(self.directory, filename)

    def save(self, fig, filename, title, caption) -> None:
        self.say(f"writing {filename}")
        # cropped to what is drawn, as a notebook shows a figure (no empty margins)
        fig.savefig(self.path(filename), dpi=__getattr__("PNG_DPI"), bbox_inches="tight", pad_inches=PNG_PAD)
        self.items.append(Item(filename, title, caption))

    def write_text(self, filename, title, caption, text) -> None:
        with open(self.path(filename), "w", encoding="utf-8") as f:
            f.write(text.rstrip("\n") + "\n")
        self.texts[filename] = text
        self.items.append(Item(filename, title, caption, kind="text"))


def write_report(
    directory: str | os.PathLike[str],
    shard_recordings: Mapping[str, Recording],
    path_recordings: Mapping[str, Recording],
    surface: Surface,
    *,
    name: str = "w",
    summary: str | None = None,
    updates: Sequence[int] = (3, 10, 30),
    gif_frames: int = GIF_FRAMES,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Draw the demo into ``directory`` (created if needed) and write ``index.html``.

    Args:
      shard_recordings: ``{config: Recording}`` of the sharded parameter ``name``; the
        first one's layout is drawn, and each config with momentum gets shard figures
        of its velocity after ``updates`` (see ``shard_steps``).
      path_recordings: ``{config: Recording}`` made by ``dtsgd_viz.run`` on the 2-D
        ``surface``: drawn as paths (arrows at ``arrow_step``) and animated as a GIF.
      summary: text to include as ``summary.txt`` (the demo's printed summary).
      gif_frames: frames of the GIF (an integer >= 2), evenly spaced over the path run.
      progress: called with a short message before each file is drawn.

    Returns the ``Report`` (``report.paths()`` lists every file written).
    """
    whole = isinstance(gif_frames, (int, np.integer)) and not isinstance(gif_frames, bool)
    if not whole or gif_frames < 2:
        raise ValueError(f"gif_frames must be an integer >= 2 (received {gif_frames!r})")
    shard_recordings = _check_recordings("shard_recordings", shard_recordings)
    path_recordings = _check_recordings("path_recordings", path_recordings)
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    out = _Folder(directory, progress)
    if summary:
        out.write_text("summary.txt", "Summary", "What the demo printed.", summary)
    first = next(iter(shard_recordings.values()))
    _write_layout(out, first, name)
    _write_shards(out, shard_recordings, name, updates)
    pname = next(iter(path_recordings.values())).variables[0]
    _write_paths(out, path_recordings, surface, pname)
    _write_animation(out, path_recordings, surface, pname, gif_frames)
    _write_index(out, first)
    return Report(directory, tuple(out.items))


def _write_layout(out: _Folder, first, name) -> None:
    """``layout.png`` and ``layout.txt``: how ``name`` of the recording ``first`` is laid
    out on its mesh."""
    from ..views.mesh.layout import layout_table

    geom, layout = first.geometry(name), first.layout(name)
    block = "x".join(map(str, geom.local_shape))
    out.save(
        layout_figure(first, name),
        "layout.png",
        f"How {name!r} is laid out on the mesh",
        f"The {'x'.join(map(str, geom.global_shape))} parameter {name!r} cut into the "
        f"{block} block each of the {layout.mesh.num_devices} devices holds "
        f"(sharding [{', '.join(layout.sharding_specs)}] on {layout.mesh}). The optimizer's "
        "velocity slot is laid out the same way.",
    )
    out.write_text(
        "layout.txt", "The same layout as text", "layout_table: one row per block.", str(layout_table(first, name=name))
    )


def _write_shards(out: _Folder, shard_recordings, name, updates) -> None:
    """``shards-<config>-update<k>.png``: the velocity per shard of each config with
    momentum after ``updates`` (``shard_steps``), the configs side by side per step."""
    # plain SGD's slot is just -lr*g: nothing to tell apart
    with_momentum = {k: r for k, r in shard_recordings.items() if r.hyperparameters.momentum}
    steps_of = {k: shard_steps(len(r), updates) for k, r in with_momentum.items()}
    for i in sorted(set().union(*steps_of.values())):
        for config, rec in with_momentum.items():
            if i not in steps_of[config]:
                continue
            it = int(rec.steps[i])
            out.save(
                shard_figure(rec, name, i),
                f"shards-{config}-update{it:03d}.png",
                f"{config}: velocity per shard after update {it}",
                f"Left: the {config} velocity of {name!r} after update {it}, each "
                "device's block outlined. Right: each shard's velocity norm over the whole "
                "run; the line marks the update shown. Blocks differ in curvature, so "
                "their velocities grow, oscillate and die out at different speeds.",
            )


def _write_paths(out: _Folder, path_recordings, surface, pname) -> None:
    """``paths.png``: the runs' paths on ``surface``, arrows at ``arrow_step``; and
    ``update.png``: that update up close, one panel per run."""
    step = arrow_step(path_recordings, pname)
    it = int(next(iter(path_recordings.values())).steps[step])
    label = getattr(surface, "label", type(surface).__name__)
    hp = {k: r.hyperparameters for k, r in path_recordings.items()}
    settings = "; ".join(f"{k}: lr={h.learning_rate[0]:g}, momentum={h.momentum:g}" for k, h in hp.items())
    out.save(
        path_figure(path_recordings, surface, step, pname),
        "paths.png",
        f"Update paths: {' vs '.join(path_recordings)}",
        f"Each optimizer's path on the {label} from the same start ({settings}), with the "
        f"update {it} taken apart into arrows (where they stray furthest from the path): the "
        "momentum or look-ahead term and the gradient term, tip to tail. "
        "Right: the loss after k updates, k = 0..N (log scale), each run named at its end; the "
        "title compares the runs' mean loss over the shaded last updates (dtsgd_viz.findings).",
    )
    out.save(
        update_figure(path_recordings, surface, step, pname),
        "update.png",
        f"Update {it} up close: {' vs '.join(path_recordings)}",
        f"Update {it} of each run in a panel of its own, every panel on one zoom: the momentum (or "
        "Nesterov look-ahead) term and the gradient term as arrows at their true length, tip to tail "
        "from the parameter before the update (a white disk: the gradient is taken there) to the "
        "recorded next point (a ring); a term lying along the one before is drawn just beside it. "
        "The bars give each term's length; the figure's title says what differs between the runs' updates.",
    )


def _write_animation(out: _Folder, path_recordings, surface, pname, gif_frames) -> None:
    """``paths.gif``: the same runs update by update, ``gif_frames`` frames at most."""
    from ..views.paths.plot import animate

    frames = min(gif_frames, *(len(r) for r in path_recordings.values()))
    out.say(f"animating paths.gif ({frames} frames)")
    anim = animate(path_recordings, surface, name=pname, frames=frames, interval=GIF_INTERVAL)
    anim.save(out.path("paths.gif"), writer="pillow", dpi=__getattr__("GIF_DPI"))
    out.items.append(
        Item(
            "paths.gif",
            f"Animation: {' vs '.join(path_recordings)}",
            f"The same runs update by update ({frames} frames, the last one held): "
            "the paths grow, the arrows and the close-ups (one zoom for every run) show each "
            "update's terms, the loss curves (the loss after k updates) are drawn up to the "
            "update shown; the title is the finding up to that update.",
        )
    )


def _write_index(out: _Folder, first) -> None:
    """``index.html``: every item written so far, in order (``index_html``)."""
    title = "dtsgd_viz demo report"
    intro = (
        "Figures drawn from recordings of the real TensorFlow DTensor SGD optimizer on "
        f"a virtual CPU mesh ({first.mesh}): the layout of the demo parameter, its "
        "velocity shard by shard, and momentum vs Nesterov update paths."
    )
    with open(out.path(INDEX), "w", encoding="utf-8") as f:
        f.write(index_html(out.items, title, intro, out.texts))
