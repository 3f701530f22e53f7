"""The close-ups the tests of ``plot_update`` and of the explorer's zoom row measure,
built once per test session and shared (``test_update_close_ups``, one module: one worker builds them):
tutorial 01's update 4, tutorial 03's runs at the updates that show each case, and
PathExplorer at tutorial 03's updates 20 and 1 (the dashboard's step-through starts there),
and the last frame of the docs' GIF (``gif_last_frame``).

Tutorial 03's updates: 1 (v_prev = 0: Nesterov's iterate and look-ahead point coincide,
μ·v_prev is zero), 2 and 9 (short gradient terms), 5 (the tutorial's close-up: momentum's
−lr·g folds back over μ·v_prev), 20 (folding back, late in the valley), 30 (small steps
near the minimum).
The figures are drawn once; the tests only read them.
"""

from __future__ import annotations

import functools

import dtsgd_viz
from dtsgd_viz.theory import surfaces

VALLEY = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)  # tutorial 01
SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03
RULES = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}
T03_UPDATES = (1, 2, 5, 9, 20, 30)


@functools.cache
def tutorial_01():
    return dtsgd_viz.run(VALLEY, {k: RULES[k] for k in ("momentum", "nesterov")}, steps=40)


@functools.cache
def tutorial_03():
    return dtsgd_viz.run(SURFACE, RULES, steps=60)


@functools.cache
def plot_update_03(step):
    """Tutorial 03's ``plot_update`` at ``step``, drawn."""
    fig = dtsgd_viz.plot_update(tutorial_03(), SURFACE, step=step)
    fig.canvas.draw()
    return fig


@functools.cache
def close_ups():
    """``[(case, figure)]``, every figure drawn: tutorial 01's update 4, tutorial 03's
    ``T03_UPDATES`` and PathExplorer at tutorial 03's update 20."""
    from dtsgd_viz.widgets import PathExplorer

    fig = dtsgd_viz.plot_update(tutorial_01(), VALLEY, step=4)
    fig.canvas.draw()
    out = [("01 plot_update step 4", fig)]
    out += [(f"03 plot_update step {k}", plot_update_03(k)) for k in T03_UPDATES]
    for step in (20, 1):
        explorer = PathExplorer(tutorial_03(), SURFACE, step=step)
        explorer.render()
        explorer.figure.canvas.draw()
        out.append((f"03 PathExplorer update {step}", explorer.figure))
    return tuple(out)


@functools.cache
def gif_last_frame():
    """The docs' ``paths.gif`` (``dtsgd-viz demo``: its 40-update runs, 20 frames) at its
    last frame, the one it holds: ``(animation, figure)``, drawn."""
    from dtsgd_viz.cli.demo import PATH_STEPS, path_surface, run_paths
    from dtsgd_viz.cli.report import GIF_FRAMES, GIF_INTERVAL
    from dtsgd_viz.views.paths.plot import animate

    anim = animate(run_paths(PATH_STEPS), path_surface(), frames=GIF_FRAMES, interval=GIF_INTERVAL)
    anim._fig.canvas.mpl_disconnect(anim._first_draw_id)  # a draw would start it at frame 0
    frames = list(anim.new_frame_seq())
    anim._func(frames[-1])
    anim._fig.canvas.draw()
    return anim, anim._fig
