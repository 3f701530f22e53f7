"""Phase maps read back where they are drawn: their meshes are cut finer along the stability boundaries."""

import numpy as np


def shown_at(mesh, lr, mu):
    """What ``mesh`` (a phase map's ``pcolormesh``) shows at the points ``(lr, mu)`` (broadcast), masked where
    the mesh is."""
    xy = mesh.get_coordinates()
    j = np.searchsorted(xy[0, :, 0], np.asarray(lr)) - 1
    i = np.searchsorted(xy[:, 0, 1], np.asarray(mu)) - 1
    return mesh.get_array()[i, j]


def at_runs(mesh, lrs, mus):
    """What ``mesh`` shows at each run's centre ``(lrs[j], mus[i])``, shape ``(len(mus), len(lrs))``."""
    return shown_at(mesh, np.asarray(lrs)[None, :], np.asarray(mus)[:, None])
