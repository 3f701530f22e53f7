# %% [markdown]
# # Nesterov vs classical momentum, on the real optimizer
#
# Same surface, same start, same learning rate and momentum: the only difference
# between the two runs below is `nesterov=True`. Both are the **real** tf-keras DTensor
# SGD optimizer, recorded by `dtsgd_viz` on a mesh where each coordinate of the
# parameter lives on its own device.
#
# The two rules, exactly as tf-keras computes them (`dtsgd_viz.reference`), with
# gradient $g$, learning rate $\eta$, momentum $\mu$ and velocity $v$:
#
# | | velocity | parameter |
# |---|---|---|
# | momentum (heavy ball, or classical) | $v \leftarrow \mu v - \eta g$ | $p \leftarrow p + v$ |
# | Nesterov (tf-keras form) | $v \leftarrow \mu v - \eta g$ | $p \leftarrow p + \mu v - \eta g$ |
#
# The velocity $v$ is the optimizer's **slot** (state it keeps per variable): a running sum
# of past gradient steps, each update keeping the fraction $\mu$ of it. Nesterov moves by
# the *new* velocity's momentum plus a fresh gradient step: a change of variables of
# "evaluate the gradient at the **look-ahead** point $p + \mu v$", where the momentum is
# about to carry the parameter. (Terms: [glossary](../docs/glossary.md).)

# %%
import dtsgd_viz

_ = dtsgd_viz.setup_devices(8)

# %%
# %matplotlib inline
import numpy as np
from IPython.display import display

from dtsgd_viz import surfaces


def show(fig):
    display(fig, include=["image/png"])


# %% [markdown]
# ## The surface: a long, narrow, tilted valley
#
# A quadratic with condition number 20 (one direction 20 times steeper than the other),
# rotated by 30 degrees. Plain gradient descent must keep its learning rate small for the steep
# direction and then crawls along the flat one; momentum speeds up the crawl but
# overshoots across the valley.

# %%
surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
print("Hessian eigenvalues:", np.round(surface.hessian_eigenvalues, 3))
print("start:", surface.default_start, " minimum:", surface.minimum[0])

# %%
configs = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}
recordings = dtsgd_viz.run(surface, configs, steps=60)
for name, rec in recordings.items():
    print(f"{name:<9} layout {rec.layout('w').sharding_specs} on {rec.mesh}")

# %% [markdown]
# The parameter `w` is a 2-vector cut over a mesh dim of size 2 into two blocks of one
# number each: `w[0]` lives on `CPU:0`, `w[1]` on `CPU:1`. Every number below was read back from those devices.
#
# ## Paths, and update 5 taken apart
#
# `step=5` picks optimizer update 5 (the first update is 1, as `recording.steps`
# counts). The left panel shows each whole path in its rule's line, the wider under the narrower
# (Nesterov, momentum, then plain on top: their first updates coincide), the legend under
# the panels naming them, with a ring where each run is after update 5 (the same ring
# marks it on the loss panel); after it the runs part:
# momentum swings across the valley, Nesterov runs in to the minimum. The terms of update
# 5 are too short to see at this scale (plain's and Nesterov's are specks), so
# `plot_update` below takes it apart up close; the right panel is the loss after k
# updates, update 5 marked with a grey line at k = 5 (the loss after it). The
# headline compares each run's mean loss over the last 10 updates (shaded; the bars across
# the band are the means): classical momentum's loss saw-tooths, so one point of it would say little. `findings` (below)
# prints the same numbers.
# Nesterov's first step is (1+μ) = 1.9 times the others': tf-keras takes
# p ← p + μ·v − lr·g with v = −lr·g, so its first update already carries the momentum term.

# %%
show(dtsgd_viz.plot_paths(recordings, surface, step=5))

# %% [markdown]
# `plot_update` takes update 5 apart up close, one panel per run: for classical momentum
# the old velocity's momentum $\mu v_{prev}$ then the gradient step $-\eta g$; for
# Nesterov the look-ahead $\mu v_{new}$ then $-\eta g$. Tip to tail, the arrows end on the
# next recorded point, in a ring ("after", as on the paths; an arrow that turns back along the
# one before, as momentum's $-\eta g$ here, is drawn just beside it); the thin line is the step
# they add up to. The small white disk is the parameter before the update, where $g$ was
# taken (tf-keras stores Nesterov's look-ahead point as the parameter). Every panel is on one
# zoom (the caption says what share of the paths' width each panel spans), so lengths
# compare by eye; plain SGD's and Nesterov's steps are far shorter than momentum's, so
# each is drawn again in an inset spanning a smaller share still (each inset names its 1/N of the same width, so
# lengths compare by eye within a panel or an inset, and between insets by the bars);
# the bars under the panels compare the lengths, as `findings` prints them (the line
# over the figure: its headline and the bars' numbers, `update_lines()`). Momentum's
# $\mu v_{prev}$ carries it far up the valley wall; Nesterov's $\mu v_{new}$ already
# holds this update's gradient, so its step is several times shorter.

# %%
# the figure's numbers: its headline and the bars' lengths
print("\n".join(dtsgd_viz.findings(recordings, surface, step=5).update_lines()))
show(dtsgd_viz.plot_update(recordings, surface, step=5))

# %% [markdown]
# ## Who gets there first
#
# `findings` gives every number the figures above state: each run's loss after k updates
# (the surface at the recorded parameters) after the last one and its mean over the last
# 10, the headline's ratios, where the paths are furthest apart, update 5 taken apart
# (`plot_update`'s headline), and "within 0.001": the first k after which the loss stays
# within $10^{-3}$ of the minimum. The rule check replays every recorded update.

# %%
print(dtsgd_viz.findings(recordings, surface, step=5, tol=1e-3))
for name, rec in recordings.items():
    bad = sum(len(s) for s in dtsgd_viz.reference.check_recording(rec).values())
    print(f"{name:<9} rule check: {'ok' if not bad else f'{bad} updates off the rule'}")

# %% [markdown]
# Within 60 updates only Nesterov reaches the tolerance; classical momentum's loss
# saw-tooths, plain SGD's falls slowly and steadily. The rule check confirms every
# recorded update follows the documented rule exactly.
#
# ## Why: each direction of the valley on its own
#
# On a quadratic the error $p_k - p^*$ splits along the Hessian's eigenvectors, and
# each part (a *mode*, with eigenvalue $h$) evolves on its own by a 2x2 matrix that
# depends only on $\eta h$ and $\mu$. After $k$ updates it has shrunk like $\rho^k$,
# $\rho$ the matrix's spectral radius (the largest size of its eigenvalues): the mode's
# **rate**, the factor its error keeps per update (`dtsgd_viz.theory`). Below, the lines
# are the real recorded parameters projected on each eigenvector (each rule in its usual
# look: momentum dashed), the dotted lines in the same colour their envelope from theory
# (a bound shrinking by $\rho$ per update, with a factor linear in $k$ near critical
# damping, where the two eigenvalues meet); one key, in the top-left panel, names the
# runs, their marks and the envelope. Plain SGD and Nesterov reach the steep direction's
# minimum within two updates (rate 0 there), so their lines drop off that panel at once.
# The bottom-left panel is $\rho$ against $\eta h$ for each rule, with the runs' two
# eigenvalues marked (the marks nest, open rings around Nesterov's filled triangle, so
# runs at one rate all show); right of it, a zoom on the band of rates at $h_1$ gives each
# run's rate in its key. The two top panels share one scale.

# %%
from dtsgd_viz import theory

for name, rec in recordings.items():
    hp = rec.hyperparameters
    rates = [
        theory.spectral_radius(hp.learning_rate[0], hp.applied_momentum, h, hp.nesterov)
        for h in surface.hessian_eigenvalues
    ]
    print(f"{name:<9} rate per update: flat direction (h=1) {rates[0]:.3f}, steep direction (h=20) {rates[1]:.3f}")
show(dtsgd_viz.plot_modes(recordings, surface))

# %% [markdown]
# What the figure shows:
#
# * **The steep direction** ($h = 20$, so $\eta h = 1$): plain SGD and Nesterov have
#   rate 0 there, and their error along it is gone after one or two updates (down to
#   float32 round-off). Classical momentum keeps oscillating across it at rate
#   $\sqrt{\mu} \approx 0.95$: that is the saw-tooth of its loss curve.
# * **The flat direction** ($h = 1$): plain SGD and classical momentum shrink at almost
#   the same rate (0.950 and 0.949), so momentum buys nothing there at $\mu = 0.9$;
#   Nesterov's rate is 0.925, and over 60 updates that is a factor of about 5 more.
# * Every recorded curve stays under its dotted envelope and touches it: the real
#   DTensor optimizer follows the linear theory.
#
# ## Where Nesterov wins, and where it does not
#
# The same theory over a grid of learning rates and momenta. The two maps count updates
# to tolerance for each rule (computed with the numpy reference of the tf-keras rule,
# which the tests tie to the real optimizer; at most 150 updates; pale grey: more than
# that, dark grey with x marks: diverges). On them: each rule's stability boundary
# ($\eta h < 2(1+\mu)$ for heavy ball, $\eta h < 2(1+\mu)/(1+2\mu)$ for Nesterov, $h = 20$ the steep
# direction's eigenvalue; a cell is the run at its centre, and where a boundary cuts a cell each side shows the
# nearest run on that side, so the colours change where the exact curve does), the iso-rate contour of the
# worst mode's $\rho$ that edges the cap, the critical-damping curve of the flat direction (left of it that
# mode creeps in, right of it it oscillates), the outlined cell of the runs above ($\eta = 0.05$,
# $\mu = 0.9$), and a diamond on each map's fastest cells: the fewest updates its title states
# (`steps_finding`, printed below the maps), on momentum's critical-damping curve.

# %%
lrs = np.geomspace(1e-3, 0.2, 24)
mus = np.linspace(0.0, 0.95, 20)
show(dtsgd_viz.plot_phase(surface, lrs, mus, steps=150, tol=1e-3, show="steps", mark=(0.05, 0.9)))

# %% [markdown]
# Who is faster where both converge: $\log_2$ of Nesterov's count over momentum's (red:
# Nesterov faster, blue: momentum faster, sand: a tie, the two counts within 10% of each other),
# with each rule's stability boundary (cells cut along it as on the step maps). Dotted cells: only one rule
# gets within the tolerance in 150 updates (the other neither converges nor diverges), tinted towards that
# rule's colour. The title counts the three kinds of cell (`phase_finding`, printed below).

# %%
show(dtsgd_viz.plot_phase(surface, lrs, mus, steps=150, tol=1e-3, show="ratio", mark=(0.05, 0.9)))

# %%
from dtsgd_viz.widgets import phase_grid

grids = {nest: phase_grid(surface, lrs, mus, steps=150, tol=1e-3, nesterov=nest) for nest in (False, True)}
mom, nes = grids[False], grids[True]
both = (mom.steps >= 0) & (nes.steps >= 0)
ratio = nes.steps / np.maximum(mom.steps, 1)  # < 1: Nesterov needs fewer updates
for band, rows in (("momentum < 0.6 ", mus < 0.6), ("momentum >= 0.6", mus >= 0.6)):
    b, r = both[rows], ratio[rows]
    n_faster, m_faster = b & (r < 1), b & (r > 1)
    print(
        f"{band}: both converge in {b.sum():3d} cells; "
        f"Nesterov faster in {n_faster.sum():3d}"
        + (f" (median {np.median(1 / r[n_faster]):.2f}x fewer updates)" if n_faster.any() else "")
        + f", momentum faster in {m_faster.sum():3d}"
        + (f" (median {np.median(r[m_faster]):.2f}x fewer)" if m_faster.any() else "")
        + f", tied in {(b & (r == 1)).sum():3d}"
    )
print(dtsgd_viz.steps_finding(mom.steps, nes.steps))  # the step maps' title
print(dtsgd_viz.phase_finding(mom.steps, nes.steps))  # the ratio map's title: ties within 10%
print(
    f"best cell of the map: momentum {mom.steps[mom.steps >= 0].min()} updates, "
    f"Nesterov {nes.steps[nes.steps >= 0].min()} updates"
)
print(
    f"cells where only momentum converges: {((mom.steps >= 0) & (nes.steps < 0)).sum()}, "
    f"only Nesterov: {((nes.steps >= 0) & (mom.steps < 0)).sum()}"
)

# %% [markdown]
# What the maps show:
#
# * **The grey region on the left is the 150-update cap, not a boundary.** Its edge
#   follows the iso-rate contour $\rho = 0.975$ (the legend names it): the rate at which the flat
#   direction's loss (1.7 of the 80 at the start; the steep direction's share is gone within a few
#   updates there) falls to the tolerance in 150 updates. More updates would move it left; the stability
#   boundaries on the right (each rule's own line: momentum dashed, Nesterov solid, as
#   on every figure) do not move.
# * **At low momentum classical momentum is faster in most cells, by about 2%**: a tie
#   within the map's 10%, so the lower part of the ratio map is sand-coloured (no cell there favours
#   Nesterov).
# * **High momentum with a large learning rate is where Nesterov wins** (red in the ratio
#   map), by a median factor of about 1.7: there classical momentum's steep direction
#   oscillates, as in the run above. At high momentum with small learning rates
#   classical momentum is again a few percent faster.
# * **Nesterov's stability boundary is lower**, so at the largest learning rates there
#   is a hatched band where only classical momentum converges. Just left of it, at
#   $\eta \approx 0.08$ and $\mu = 0.25$ to $0.3$, are the only two blue cells:
#   Nesterov is just inside its boundary there, its steep direction
#   shrinks only by a factor of 0.955 per update (momentum's slowest mode: 0.879), and
#   it needs 125 updates to momentum's 30. Past both boundaries (the x marks) both rules diverge; the grey on
#   the left is the cap again: neither rule gets within the tolerance in 150 updates.
# * **Along $\mu = 0.95$ nearly only Nesterov gets within 150 updates**: all 17 cells where only
#   Nesterov converges (pale red, dotted) are in the top row. Classical momentum gets there in one
#   top-row cell, at $\eta \approx 0.0016$, and only at the 150th update (a tie with Nesterov's 146).
#   Its rate is never below $\sqrt{\mu} \approx 0.975$, about the cap's edge; Nesterov's two roots
#   multiply to $\mu(1 - \eta h)$, less. The one pale blue dotted cell ($\eta \approx 0.016$,
#   $\mu = 0.35$) sits on the cap's edge the other way: momentum is within tol at update 150,
#   Nesterov at 151.
# * Classical momentum's fastest cells (16 updates) lie on its critical-damping curve;
#   Nesterov's (15 updates) a little to the right of its own, between the curve and
#   its boundary. Tuned, the two rules are about equally fast.
#
# The diagram below shows the ratio map only (the step maps are above), with both rules'
# paths and their loss at a picked cell. Click a cell: your browser runs tf-keras' rule
# there at once (the recurrence of `dtsgd_viz.reference`, whose float32 form the test
# suite ties to the real optimizer), so this works on the documentation site too, with
# no kernel. Drag the white circle to start the runs elsewhere. Hover a cell for both
# rules' updates from the map. With a kernel, each click and each released drag also
# runs the real DTensor SGD there; its parameters are the dots on the lines. A run that
# diverges is drawn up to where it leaves the view. The diagram opens on the cell
# $\eta \approx 0.05$, $\mu = 0.8$, where Nesterov needs about half the updates; `phase.pick`
# and `phase.start` read (and set) the cell and the start. A page whose
# scripts have not run (this notebook read as a file) shows the still picture: the ratio map with
# its colour key and legend, the picked cell outlined, and under it the real runs' paths there and
# their loss, each line marked at the update from which on it stays within tol (the count the title,
# `phase.pick_finding()`, gives; a run may touch the tol line earlier and leave it again).

# %%
# NBVAL_IGNORE_OUTPUT
phase = dtsgd_viz.web.PhaseDiagram(surface, learning_rates=lrs, momenta=mus, steps=150, pick=(17, 16))
print(phase.pick_finding())
phase

# %% [markdown]
# ## Try it yourself
#
# The comparison below runs all three rules whenever you move a slider (learning rate,
# momentum, updates) or drag the start (the white circle) on the contours: your browser
# runs tf-keras' rule at once, so it works without a kernel too, on the documentation
# site. With a kernel, each released slider or drag also runs the real DTensor SGD
# there; its parameters are the dots on the lines. It opens on the settings of the runs
# above, so its headline states the numbers `findings` prints (above it); its table adds
# each run's loss after the last update and the mean the headline compares. A page whose scripts
# have not run shows that table as the still picture.

# %%
# NBVAL_IGNORE_OUTPUT
print(dtsgd_viz.findings(recordings, surface).headline())
dtsgd_viz.web.CompareWidget(surface, learning_rate=0.05, momentum=0.9, steps=60)

# %% [markdown]
# The path explorer steps through the three recorded runs from the top of this notebook.
# It starts at update 20, not at the update 5 taken apart above: by then Nesterov's path
# runs along the valley towards the minimum, while classical momentum still bounces from
# wall to wall (the saw-tooth of its loss, right). At the scale of the paths most of
# these updates are a few pixels long, so under the loss each run's update is drawn up
# close, all three on one shared zoom (the caption says it once: every panel spans 1/6.0
# of the paths' width), with its terms as arrows at their true length. A run too small to read
# at that zoom (here plain and Nesterov) is drawn again, closer, in an inset that names its
# arrows and says its own 1/N, as the still (what a page without scripts shows) draws it; a
# dotted leader runs from what the inset enlarges to the inset, from a dotted box round it where
# that box is large enough to see (plain's, 1/200 of the paths' width, lies under its rings). A
# key under the close-ups names their marks, each in the runs' colours as drawn.
# Update 20 is marked as
# in `plot_paths`: each ring is where its run is after update 20, and the loss panel's
# grey line and rings sit at k = 20, the loss after it, with the pale band over the
# updates whose mean the headline compares; the loss after update 20 is faded, as the paths
# after it are. In the browser, bars beside the close-ups give
# the lengths of μ·v, −lr·g and of the whole step, each with its number. At update 20
# momentum's step is several times Nesterov's.
#
# Your browser draws this explorer from numbers the notebook computed once, so it works
# without a kernel too: on the documentation site, the slider, Play, hover (a point of a
# path: the loss after that many updates) and clicks (jump to the update whose ring is there) all respond.
# `explorer.update` reads the update the slider shows, and setting it moves the slider.
# Its headline, over the settings, is `findings(..., upto=n).headline()` at the update n the
# slider shows: over which updates up to n the mean loss is compared, whose is lowest, and by
# how much. The lines printed above it are that headline at update 20 and its bars' numbers there,
# `findings(..., step=20).update_lines()`.

# %%
# NBVAL_IGNORE_OUTPUT
print(dtsgd_viz.findings(recordings, surface, upto=20).headline())
print("\n".join(dtsgd_viz.findings(recordings, surface, step=20).update_lines()))
explorer = dtsgd_viz.web.PathExplorer(recordings, surface, step=20)
explorer

# %% [markdown]
# ## Where next
#
# The other tutorials, in order (the terms they use are defined in the
# [glossary](../docs/glossary.md)):
#
# - [01_quickstart](01_quickstart.ipynb): a mesh, a layout, the instrumented optimizer and a recording; the first
#   pictures (layout, velocity block by block, update paths).
# - [02_mesh_layouts](02_mesh_layouts.ipynb): how layouts cut tensors into blocks on 1-, 2- and 3-D meshes, replicas,
#   the velocity slot's layout, memory per device, `LayoutExplorer`.
# - [04_sharded_model](04_sharded_model.ipynb): a tf-keras MLP sharded by a `LayoutMap`, recorded while it trains: the
#   all-reduce, each block's velocity, a probe's path, the stale-velocity hazard. **Next:** the same rules on a real
#   sharded tf-keras model, block by block.
# - [05_recordings](05_recordings.ipynb): save a recording, load it without TensorFlow, explore it with `ShardExplorer`.
# - [06_long_runs](06_long_runs.ipynb): record long runs cheaply: stats mode, decimation, a ring of full values,
#   `model.fit`.
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording.
