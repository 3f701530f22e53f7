"""The momentum rules' spectral radius written out for the tests, independently of
dtsgd_viz.theory (numpy only: the view tests check they import no TensorFlow)."""

import numpy as np


def radius(lr, mu, h, nesterov):
    """The spectral radius of tf-keras' update on a quadratic mode of curvature ``h``:
    the 2x2 iteration matrix of (error, velocity), its eigenvalues found numerically."""
    a = lr * h
    M = np.array([[1 - (1 + mu) * a, mu * mu], [-a, mu]]) if nesterov else np.array([[1 - a, mu], [-a, mu]])
    return np.max(np.abs(np.linalg.eigvals(M)))
