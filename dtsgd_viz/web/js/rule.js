// tf-keras' SGD rule on a 2-parameter quadratic, run by the browser where a click or a
// drag needs a path Python did not compute (PhaseDiagram, CompareWidget); a browser
// test checks it against numpy's theory.reference to 1e-12.

// tf-keras' SGD on the quadratic 0.5 (p - m)·H(p - m) + f: sgd_step's order of operations
function ruleRun(H, m, p0, lr, mu, nesterov, steps) {
  let p0x = p0[0], p1x = p0[1], v0 = 0, v1 = 0;
  const out = new Float64Array(2 * (steps + 1));
  out[0] = p0x; out[1] = p1x;
  for (let k = 1; k <= steps; k++) {
    const d0 = p0x - m[0], d1 = p1x - m[1];
    const g0 = d0 * H[0] + d1 * H[1], g1 = d0 * H[2] + d1 * H[3];
    const s0 = -g0 * lr, s1 = -g1 * lr;
    v0 = s0 + v0 * mu; v1 = s1 + v1 * mu;
    if (nesterov) { p0x = p0x + (s0 + v0 * mu); p1x = p1x + (s1 + v1 * mu); }
    else { p0x = p0x + v0; p1x = p1x + v1; }
    out[2 * k] = p0x; out[2 * k + 1] = p1x;
  }
  return out;
}

function ruleLosses(H, m, f, path) {
  const n = path.length / 2, out = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const d0 = path[2 * k] - m[0], d1 = path[2 * k + 1] - m[1];
    out[k] = 0.5 * (d0 * (H[0] * d0 + H[1] * d1) + d1 * (H[2] * d0 + H[3] * d1)) + f;
  }
  return out;
}

// theory.convergence.steps_to_tolerance and diverged, for one run
function outcome(losses, fmin, tol) {
  const n = losses.length;
  let lastBad = 0;
  for (let k = n - 1; k >= 0; k--) {
    const z = losses[k];
    if (!(isFinite(z) && Math.abs(z - fmin) <= tol)) { lastBad = k + 1; break; }
  }
  const steps = lastBad < n ? lastBad : -1;
  const last = losses[n - 1];
  const worse = !isFinite(last) || Math.abs(last - fmin) > Math.abs(losses[0] - fmin);
  return { steps, diverged: steps < 0 && worse };
}
