// CompareWidget: plain SGD, classical momentum and Nesterov from one start on a
// 2-parameter quadratic. The quadratic, the looks and the sliders' ranges come from the
// state Python wrote (dtsgd_viz.web.compare_state); every slider move and dragged start
// runs tf-keras' rule here (ruleRun, js/rule.js: the recurrence of
// dtsgd_viz.theory.reference.sgd_step, in float64). The headline is
// dtsgd_viz.findings' (views/paths/findings.py), of the runs drawn.

const PW = 930, PH = 440;
const PATHS = { x: 36, y: 10, w: 400, h: 400 };
const LOSS = { x: 548, y: 28, w: 362, h: 214 };
const TABLE = { x: 548, y: 318 };

// ---- dtsgd_viz.findings of the runs drawn (views/paths/findings.py, geometry.py)

// Python's f"{x:.{p}g}"
function pyG(x, p) {
  if (!isFinite(x)) return isNaN(x) ? "nan" : x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const [mant, ex] = x.toExponential(p - 1).split("e");
  const e = Number(ex);
  const strip = (s) => (s.includes(".") ? s.replace(/0+$/, "").replace(/\.$/, "") : s);
  if (e < -4 || e >= p) return strip(mant) + "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0");
  return strip(x.toFixed(Math.max(0, p - 1 - e)));
}

function timesText(f) { return !isFinite(f) ? "∞×" : f >= 10 ? `${f.toFixed(0)}×` : `${f.toFixed(1)}×`; }

// findings.window_text(short=True): "k = a–b" never broken
function windowText(a, b) {
  return a === b ? `loss after ${b} update${b !== 1 ? "s" : ""}` : `mean loss over k\u00a0=\u00a0${a}–${b}`;
}

// the first update whose point is non-finite or outside box (geometry.divergence_update)
function divergenceUpdate(path, box) {
  const n = path.length / 2, [[x0, x1], [y0, y1]] = box;
  for (let k = 1; k < n; k++) {
    const x = path[2 * k], y = path[2 * k + 1];
    if (!(isFinite(x) && isFinite(y) && x >= x0 && x <= x1 && y >= y0 && y <= y1)) return k;
  }
  return null;
}

// geometry.diverged_runs with the view box: a run diverged when its last point is
// beyond the view box grown by its size on each side
function divergedAt(path, box) {
  const n = path.length / 2, last = [path[2 * n - 2], path[2 * n - 1]];
  const inside = last.every((v, i) => {
    const [a, b] = box[i], lo = a - (b - a), hi = b + (b - a);
    return isFinite(v) && v >= lo && v <= hi;
  });
  return inside ? undefined : divergenceUpdate(path, box);
}

function findingsOf(runs, names, box, withMu, level) {
  const N = runs[names[0]].path.length / 2 - 1;
  const tail = Math.max(1, Math.min(10, Math.floor(N / 5)));
  const a = N - tail + 1, b = N;
  const gone = {}, tailLoss = {}, finalLoss = {};
  for (const r of names) {
    const at = divergedAt(runs[r].path, box);
    if (at !== undefined) gone[r] = at;
  }
  for (const r of names) {
    const L = runs[r].losses;
    finalLoss[r] = L[N];
    let s = 0, ok = true;
    for (let k = a; k <= b; k++) { if (!isFinite(L[k])) ok = false; s += L[k]; }
    tailLoss[r] = ok ? s / tail : NaN;
    if (!ok && !(r in gone)) {
      let first = null;
      for (let k = 0; k < L.length; k++) if (!isFinite(L[k])) { first = k; break; }
      gone[r] = first;
    }
  }
  const ranking = names.filter((r) => !(r in gone) && isFinite(tailLoss[r]) && tailLoss[r] >= 0)
    .sort((p, q) => tailLoss[p] - tailLoss[q]);
  const low = ranking.length ? tailLoss[ranking[0]] : NaN;
  const times = {};
  for (const r of ranking) times[r] = low > 0 ? tailLoss[r] / low : Infinity;
  const isLevel = ranking.length >= 2 && times[ranking[1]] <= level;
  // where the runs (with momentum, when two have it) are furthest apart after an update,
  // before any run left the view (scene.default_update, geometry.most_different_index)
  const allowed = new Array(N).fill(true);
  for (const r of names) if (gone[r] !== undefined && gone[r] !== null) for (let i = Math.max(0, gone[r] - 1); i < N; i++) allowed[i] = false;
  const sel = withMu.length >= 2 ? withMu : names;
  let best = -1, bestD = -Infinity;
  const dist = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    let d = 0;
    for (let p = 0; p < sel.length; p++) for (let q = p + 1; q < sel.length; q++) {
      const P = runs[sel[p]].path, Q = runs[sel[q]].path;
      d = Math.max(d, Math.hypot(P[2 * i + 2] - Q[2 * i + 2], P[2 * i + 3] - Q[2 * i + 3]));
    }
    dist[i] = d;
    if (isFinite(d) && allowed[i] && d > bestD) { bestD = d; best = i; }
  }
  if (best < 0) best = Math.max(0, allowed.indexOf(true));
  return { names, N, tail, window: [a, b], tailLoss, finalLoss, ranking, times, level: isLevel, levelAt: level, gone, apart: [best + 1, dist[best]] };
}

function headlineOf(f, name) {
  const goneNames = f.names.filter((r) => r in f.gone);
  const tail = goneNames.length
    ? "; " + goneNames.map((r) => name(r) + (f.gone[r] ? ` diverged at update ${f.gone[r]}` : " diverged")).join(", ")
    : "";
  const capital = (s) => s.slice(0, 1).toUpperCase() + s.slice(1);
  if (!f.ranking.length) return capital(goneNames.length ? goneNames.map(name).join(", ") + " diverged" : "The runs' paths");
  const best = f.ranking[0], low = f.tailLoss[best];
  const said = windowText(...f.window);
  let text;
  if (f.ranking.length === 1) text = `${said}: ${name(best)} at ${pyG(low, 2)}`;
  else if (f.level && f.ranking.some((r) => f.times[r] > f.levelAt)) {
    // only some runs are level (findings.headline): name them, then how far below the others
    const lv = f.ranking.filter((r) => f.times[r] <= f.levelAt);
    const below = f.ranking.slice(lv.length).slice(0, 2).map((r) => `${timesText(f.times[r])} below ${name(r)}`).join(", ");
    text = `lowest ${said}: ${lv.map(name).join(" and ")} level at ${pyG(low, 2)}, ${below}`;
  } else if (f.level) {
    text = `${said}: the runs level at ${pyG(low, 2)}`;
    if (f.names.length > 1) text += "; " + `paths furthest apart after update ${f.apart[0]}`.replace(/ /g, "\u00a0");
  } else {
    const below = f.ranking.slice(1, 3).map((r) => `${timesText(f.times[r])} below ${name(r)}`).join(", ");
    text = `lowest ${said}: ${name(best)}, ${below}`;
  }
  return capital(text + tail);
}

function render({ model, el: root }) {
  const d = model.get("data");
  const rules = d.rules, names = d.rule_names, looks = d.looks;
  const H = d.hessian, mMin = d.minimum, fMin = d.min_value, box = d.box;
  const name = (r) => names[r] || r;
  const uid = "dvc" + Math.random().toString(36).slice(2, 8);

  root.innerHTML = "";
  root.classList.add("dtsgd-viz", "dtsgd-viz-compare");
  Object.assign(root.style, { position: "relative", maxWidth: PW + "px", font: "13px sans-serif" });

  // ---- the controls: HTML range inputs; the picture follows them as they move, the
  // kernel hears of a setting when it is released
  const bar = html("div", { class: "dv-controls" }, root);
  Object.assign(bar.style, { display: "flex", gap: "28px", alignItems: "center", margin: "2px 0 6px 36px", flexWrap: "wrap" });
  function control(key, label, attrs) {
    const wrap = html("label", {}, bar);
    Object.assign(wrap.style, { display: "flex", alignItems: "center", gap: "6px", fontSize: "12.5px" });
    html("span", {}, wrap, label);
    const input = html("input", { type: "range", class: `dv-${key}`, ...attrs }, wrap);
    input.style.width = "150px";
    const out = html("span", { class: `dv-${key}-value` }, wrap, "");
    Object.assign(out.style, { minWidth: "3.2em", fontVariantNumeric: "tabular-nums" });
    return { input, out };
  }
  const [lrLo, lrHi] = d.lr_range;
  const cLr = control("learning-rate", "learning rate", { min: Math.log10(lrLo), max: Math.log10(lrHi), step: "any" });
  const cMu = control("momentum", "momentum μ", { min: d.momentum_range[0], max: d.momentum_range[1], step: 0.01 });
  const cSteps = control("steps", "updates", { min: d.steps_range[0], max: d.steps_range[1], step: 1 });
  const head = html("div", { class: "dv-headline" }, root);
  Object.assign(head.style, { fontWeight: "bold", fontSize: "13.5px", margin: "4px 0 0 36px", minHeight: "1.3em" });

  const svg = el("svg", { viewBox: `0 0 ${PW} ${PH}`, width: "100%", role: "img", "aria-label": "plain SGD, momentum and Nesterov compared" }, root);
  const tip = tooltip(root);
  const defs = el("defs", {}, svg);
  const clipPaths = el("clipPath", { id: `${uid}-paths` }, defs);
  const F = fitBox(box, PATHS);
  el("rect", { x: F.inner.x, y: F.inner.y, width: F.inner.w, height: F.inner.h }, clipPaths);
  const clipLoss = el("clipPath", { id: `${uid}-loss` }, defs);
  el("rect", { x: LOSS.x, y: LOSS.y, width: LOSS.w, height: LOSS.h }, clipLoss);

  // ---- the paths panel: contours, the minimum, the three paths, the start to drag
  const img = el("image", { x: F.inner.x, y: F.inner.y, width: F.inner.w, height: F.inner.h, preserveAspectRatio: "none" }, svg);
  img.setAttributeNS("http://www.w3.org/1999/xlink", "href", "data:image/png;base64," + d.contours);
  img.setAttribute("href", "data:image/png;base64," + d.contours);
  el("rect", { x: F.inner.x, y: F.inner.y, width: F.inner.w, height: F.inner.h, fill: "none", stroke: "#444", "stroke-width": 0.8 }, svg);
  const pathLayer = el("g", { "clip-path": `url(#${uid}-paths)`, class: "dv-paths", "data-box": JSON.stringify(box), "data-rect": JSON.stringify(F.inner) }, svg);
  el("path", { d: markerPath("star", 8), transform: `translate(${F.x(mMin[0])},${F.y(mMin[1])})`, fill: d.minimum_face || "white", stroke: "black", "stroke-width": 0.8, class: "dv-minimum" }, svg);
  const startNode = el("circle", { r: 6.5, fill: "white", stroke: "black", "stroke-width": 1.4, class: "dv-start", style: "cursor: grab" }, svg);
  const caption = text(svg, F.inner.x, F.inner.y + F.inner.h + 16, "", { "font-size": 11, fill: "#444", class: "dv-caption" });
  const hoverRing = el("circle", { r: 4.5, fill: "none", stroke: "black", "stroke-width": 1.2, display: "none", "pointer-events": "none" }, svg);

  // ---- the loss panel (its x axis follows the updates slider)
  const [lo, hi] = d.loss_range;
  const LY = logScale(lo, hi, LOSS.y + LOSS.h, LOSS.y);
  const windowBand = el("rect", { y: LOSS.y, height: LOSS.h, fill: "#000", "fill-opacity": 0.06, class: "dv-window" }, svg);
  el("rect", { x: LOSS.x, y: LOSS.y, width: LOSS.w, height: LOSS.h, fill: "none", stroke: "#444", "stroke-width": 0.8 }, svg);
  d.loss_ticks.forEach((t, q) => {
    el("line", { x1: LOSS.x - 4, x2: LOSS.x, y1: LY(t), y2: LY(t), stroke: "#444" }, svg);
    if (q % 2 === (d.loss_ticks.length - 1) % 2) text(svg, LOSS.x - 7, LY(t) + 4, d.loss_labels[q], { "text-anchor": "end", "font-size": 10.5 });
  });
  const xTicks = el("g", {}, svg);
  text(svg, LOSS.x + LOSS.w / 2, LOSS.y + LOSS.h + 31, "updates made (k)", { "text-anchor": "middle", "font-size": 12 });
  text(svg, LOSS.x, LOSS.y - 8, fMin === 0 ? "loss after k updates (log)" : "loss after k updates − minimum (log)", { "font-size": 11.5 });
  const lossLayer = el("g", { "clip-path": `url(#${uid}-loss)`, class: "dv-losses" }, svg);
  const table = el("g", { class: "dv-table" }, svg);

  let lr = model.get("learning_rate"), mu = model.get("momentum"), steps = model.get("steps");
  let start = model.get("start").slice();
  let computed = null, found = null, LX = null, drawnPts = {};

  function showControls() {
    cLr.input.value = String(Math.log10(lr)); cLr.out.textContent = fmt(lr);
    cMu.input.value = String(mu); cMu.out.textContent = mu.toFixed(2);
    cSteps.input.value = String(steps); cSteps.out.textContent = String(steps);
  }

  function compute() {
    const out = {};
    for (const r of rules) {
      const path = ruleRun(H, mMin, start, lr, d.uses_momentum[r] ? mu : 0, d.nesterov[r], steps);
      out[r] = { path, losses: ruleLosses(H, mMin, fMin, path) };
    }
    return out;
  }

  function realMatches(real) {
    const p = real && real.params;
    if (!real || !real.paths || !p) return false;
    return Math.abs(p.learning_rate - lr) <= 1e-12 * lr && Math.abs(p.momentum - mu) <= 1e-12 && p.steps === steps &&
      Math.abs(p.start[0] - start[0]) < 1e-9 && Math.abs(p.start[1] - start[1]) < 1e-9;
  }

  function drawRuns() {
    pathLayer.innerHTML = ""; lossLayer.innerHTML = ""; table.innerHTML = ""; xTicks.innerHTML = "";
    LX = linear(0, steps, LOSS.x, LOSS.x + LOSS.w);
    (d.update_ticks[steps - 1] || [0, steps]).forEach((t) => {
      el("line", { x1: LX(t), x2: LX(t), y1: LOSS.y + LOSS.h, y2: LOSS.y + LOSS.h + 4, stroke: "#444" }, xTicks);
      text(xTicks, LX(t), LOSS.y + LOSS.h + 16, String(t), { "text-anchor": "middle", "font-size": 10.5 });
    });
    const [a, b] = found.window;
    const wx0 = LX(Math.max(0, a - 0.5)), wx1 = LX(Math.min(steps, b + 0.5));
    windowBand.setAttribute("x", wx0); windowBand.setAttribute("width", Math.max(1, wx1 - wx0));
    const real = model.get("real") || {};
    const realHere = realMatches(real);
    drawnPts = {};
    // the widest line first, the thinnest on top: a thin path on a thick one stays visible
    for (const r of [...rules].sort((p, q) => looks[q].width - looks[p].width)) {
      const { path, losses } = computed[r];
      const n = path.length / 2;
      const at = found.gone[r];
      const last = at === undefined || at === null ? n - 1 : Math.min(n - 1, at); // up to the first point outside
      const xs = [], ys = [];
      for (let k = 0; k <= last; k++) { xs.push(F.x(path[2 * k])); ys.push(F.y(path[2 * k + 1])); }
      drawnPts[r] = { xs, ys };
      el("polyline", { points: points(xs, ys), stroke: "white", "stroke-width": looks[r].width + 1.6, fill: "none", "stroke-opacity": 0.6, "stroke-linejoin": "round" }, pathLayer);
      el("polyline", { points: points(xs, ys), ...lineStyle(looks[r]), class: `dv-path dv-path-${r}` }, pathLayer);
      const lx = [], lyv = [];
      for (let k = 0; k < losses.length; k++) {
        const z = losses[k] - fMin;
        if (!isFinite(z)) break;
        lx.push(LX(k)); lyv.push(LY(Math.max(lo / 10, Math.min(hi * 10, z > 0 ? z : lo / 10))));
      }
      el("polyline", { points: points(lx, lyv), ...lineStyle(looks[r]), class: `dv-loss dv-loss-${r}` }, lossLayer);
    }
    if (realHere)
      for (const r of rules) {
        const rp = arr(real.paths[r]);
        const g = el("g", { class: `dv-real dv-real-${r}` }, pathLayer);
        const stride = Math.max(1, Math.floor(rp.shape[0] / 80));
        for (let k = 0; k < rp.shape[0]; k += stride) {
          const px = rp.at(k, 0), py = rp.at(k, 1);
          if (!(isFinite(px) && isFinite(py)) || px < box[0][0] || px > box[0][1] || py < box[1][0] || py > box[1][1]) continue;
          el("circle", { cx: F.x(px).toFixed(2), cy: F.y(py).toFixed(2), r: 2.3, fill: looks[r].color, stroke: "white", "stroke-width": 0.6 }, g);
        }
      }
    startNode.setAttribute("cx", F.x(start[0])); startNode.setAttribute("cy", F.y(start[1]));
    const left = rules.filter((r) => r in found.gone).map((r) => `${name(r)} left the view${found.gone[r] ? " at update " + found.gone[r] : ""}`);
    caption.textContent = left.join(" · ") || "drag the white circle to move the start";
    head.textContent = found.headline;
    head.setAttribute("data-window", JSON.stringify(found.window));
    head.setAttribute("data-means", JSON.stringify(Object.fromEntries(rules.map((r) => [r, isFinite(found.tailLoss[r]) ? found.tailLoss[r] : null]))));

    // ---- the table: each run's loss after the last update and the mean the headline compares
    const cx = [TABLE.x + 196, TABLE.x + 316];
    text(table, cx[0], TABLE.y - 22, `after ${steps} update${steps !== 1 ? "s" : ""}`, { "text-anchor": "end", "font-size": 11, fill: "#444", class: "dv-final-head" });
    text(table, cx[1], TABLE.y - 22, windowText(a, b).replace("loss after", "after").replace("mean loss over ", "mean, "), { "text-anchor": "end", "font-size": 11, fill: "#444", class: "dv-mean-head" });
    el("line", { x1: TABLE.x, x2: cx[1] + 4, y1: TABLE.y - 16, y2: TABLE.y - 16, stroke: "#999", "stroke-width": 0.6 }, table);
    const loss = (v) => (isFinite(v) ? v.toExponential(2).replace("e-", "e\u2212") : "—");
    rules.forEach((r, q) => {
      const y = TABLE.y + 2 + q * 20;
      el("line", { x1: TABLE.x, x2: TABLE.x + 24, y1: y - 4, y2: y - 4, ...lineStyle(looks[r]) }, table);
      text(table, TABLE.x + 30, y, name(r), { "font-size": 12, "font-weight": found.ranking[0] === r ? "bold" : "normal" });
      text(table, cx[0], y, loss(found.finalLoss[r]), { "text-anchor": "end", "font-size": 12, class: `dv-final dv-final-${r}`, "data-value": String(found.finalLoss[r]) });
      text(table, cx[1], y, r in found.gone ? "diverged" : loss(found.tailLoss[r]), { "text-anchor": "end", "font-size": 12, class: `dv-mean dv-mean-${r}` });
    });
    const note = realHere ? "dots: the real DTensor SGD" : real.error ? "real run failed: " + real.error.slice(0, 60) : "";
    text(table, TABLE.x, TABLE.y + 74, "lines: tf-keras' rule, run in your browser", { "font-size": 10.5, fill: "#555" });
    if (note) text(table, TABLE.x, TABLE.y + 90, note, { "font-size": 10.5, fill: "#555", class: "dv-real-note" });
  }

  function redraw() {
    computed = compute();
    const withMu = mu !== 0 ? rules.filter((r) => d.uses_momentum[r]) : [];
    found = findingsOf(computed, rules, box, withMu, d.level);
    found.headline = headlineOf(found, name);
    showControls();
    drawRuns();
  }

  // ---- the controls
  const setLr = () => Number(Math.pow(10, Number(cLr.input.value)).toPrecision(3));
  const setMu = () => Math.round(Number(cMu.input.value) * 100) / 100;
  const setSteps = () => Math.round(Number(cSteps.input.value));
  const inputs = [
    [cLr.input, () => { lr = Math.min(lrHi, Math.max(lrLo, setLr())); }, "learning_rate", () => lr],
    [cMu.input, () => { mu = setMu(); }, "momentum", () => mu],
    [cSteps.input, () => { steps = setSteps(); }, "steps", () => steps],
  ];
  const handlers = [];
  for (const [input, read, key, value] of inputs) {
    const onInput = () => { read(); redraw(); };
    const onChange = () => { read(); redraw(); model.set(key, value()); model.save_changes(); };
    input.addEventListener("input", onInput);
    input.addEventListener("change", onChange);
    handlers.push([input, onInput, onChange]);
  }

  // ---- hover: the nearest path point, or the nearest loss point
  function svgPoint(ev) {
    const pt = svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    return pt.matrixTransform(svg.getScreenCTM().inverse());
  }
  svg.addEventListener("mousemove", (ev) => {
    if (dragging) return;
    const p = svgPoint(ev);
    let best = null, bestD = 10;
    const inPaths = p.x >= F.inner.x && p.x <= F.inner.x + F.inner.w && p.y >= F.inner.y && p.y <= F.inner.y + F.inner.h;
    const inLoss = p.x >= LOSS.x && p.x <= LOSS.x + LOSS.w && p.y >= LOSS.y && p.y <= LOSS.y + LOSS.h;
    for (const r of inPaths || inLoss ? rules.slice().reverse() : []) {
      const { xs, ys } = drawnPts[r];
      const L = computed[r].losses;
      for (let k = 0; k < (inPaths ? xs.length : L.length); k++) {
        const x = inPaths ? xs[k] : LX(k);
        const y = inPaths ? ys[k] : LY(Math.max(lo / 10, Math.min(hi * 10, L[k] - fMin)));
        const dd = Math.hypot(x - p.x, y - p.y);
        if (dd < bestD) { bestD = dd; best = { r, k, x, y }; }
      }
    }
    if (!best) { tip.hide(); hoverRing.setAttribute("display", "none"); return; }
    hoverRing.setAttribute("cx", best.x); hoverRing.setAttribute("cy", best.y); hoverRing.setAttribute("display", "inline");
    const L = computed[best.r].losses[best.k];
    const at = best.k === 0 ? "the start" : `after update ${best.k}`;
    const bx = root.getBoundingClientRect();
    tip.show(`${name(best.r)}, ${at}\nloss ${fmt(L)}`, ev.clientX - bx.left, ev.clientY - bx.top);
  });
  svg.addEventListener("mouseleave", () => { tip.hide(); hoverRing.setAttribute("display", "none"); });

  // ---- drag the start
  let dragging = false;
  function toData(ev) {
    const p = svgPoint(ev), s = F.scale;
    const [[x0, x1], [y0, y1]] = box;
    const x = box[0][0] + (p.x - F.inner.x) / s, y = box[1][1] - (p.y - F.inner.y) / s;
    return [Math.min(x1, Math.max(x0, x)), Math.min(y1, Math.max(y0, y))];
  }
  startNode.addEventListener("pointerdown", (ev) => { dragging = true; tip.hide(); startNode.setPointerCapture(ev.pointerId); ev.preventDefault(); });
  startNode.addEventListener("pointermove", (ev) => { if (!dragging) return; start = toData(ev); redraw(); });
  const release = (ev) => {
    if (!dragging) return;
    dragging = false;
    start = toData(ev);
    redraw();
    model.set("start", start.slice());
    model.save_changes();
  };
  startNode.addEventListener("pointerup", release);
  startNode.addEventListener("pointercancel", release);

  // ---- the traits, set from Python (or echoed back)
  const onLr = () => { const v = model.get("learning_rate"); if (v !== lr) { lr = v; redraw(); } };
  const onMu = () => { const v = model.get("momentum"); if (v !== mu) { mu = v; redraw(); } };
  const onSteps = () => { const v = model.get("steps"); if (v !== steps) { steps = v; redraw(); } };
  const onStart = () => { const s = model.get("start"); if (s[0] !== start[0] || s[1] !== start[1]) { start = s.slice(); redraw(); } };
  const onReal = () => drawRuns();
  const traits = [["change:learning_rate", onLr], ["change:momentum", onMu], ["change:steps", onSteps], ["change:start", onStart], ["change:real", onReal]];
  for (const [ev, fn] of traits) model.on(ev, fn);
  root.dtsgdRule = { ruleRun, ruleLosses, outcome, findingsOf, headlineOf, paths: () => computed, findings: () => found };
  redraw();
  return () => {
    for (const [ev, fn] of traits) model.off(ev, fn);
    for (const [input, onInput, onChange] of handlers) { input.removeEventListener("input", onInput); input.removeEventListener("change", onChange); }
  };
}

export default { render };
