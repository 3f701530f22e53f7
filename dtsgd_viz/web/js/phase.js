// PhaseDiagram: who needs fewer updates over (learning rate, momentum), each rule's
// stability boundary, and both rules' paths and losses at the picked cell. The map's
// numbers and colours come from the state Python wrote (dtsgd_viz.web.phase_state); a
// clicked cell or a dragged start runs tf-keras' rule here (ruleRun, js/rule.js: the recurrence of
// dtsgd_viz.theory.reference.sgd_step, in float64).

const PW = 930, PH = 520;
const MAP = { x: 62, y: 34, w: 400, h: 318 };
const BAR = { x: 62, y: 420, w: 400, h: 10 };
const PATHS = { x: 528, y: 34, w: 232, h: 232 };
const LOSS = { x: 574, y: 358, w: 340, h: 114 };

function outcomeText(o, maxSteps) {
  if (o.diverged) return "diverges";
  return o.steps < 0 ? `not within tol in ${maxSteps}` : `${o.steps} updates`;
}

function render({ model, el: root }) {
  const d = model.get("data");
  const rules = d.rules, names = d.rule_names, looks = d.looks;
  const lrs = arr(d.learning_rates).values, mus = arr(d.momenta).values;
  const lrE = arr(d.lr_edges).values, muE = arr(d.mu_edges).values;
  const nLr = lrs.length, nMu = mus.length;
  const regions = arr(d.regions).values, ratio = arr(d.ratio).values;
  const steps = {}, div = {};
  for (const r of rules) { steps[r] = arr(d.steps[r]).values; div[r] = arr(d.diverged[r]).values; }
  const H = d.hessian, mMin = d.minimum, fMin = d.min_value, tol = d.tol, maxSteps = d.max_steps;
  const uid = "dvp" + Math.random().toString(36).slice(2, 8);

  root.innerHTML = "";
  root.classList.add("dtsgd-viz", "dtsgd-viz-phase");
  Object.assign(root.style, { position: "relative", maxWidth: PW + "px", font: "13px sans-serif" });
  const svg = el("svg", { viewBox: `0 0 ${PW} ${PH}`, width: "100%", role: "img", "aria-label": "phase diagram" }, root);
  const tip = tooltip(root);
  const defs = el("defs", {}, svg);
  for (const [region, hatch] of Object.entries(d.hatches)) {
    const pat = el("pattern", { id: `${uid}-h-${region}`, width: 6, height: 6, patternUnits: "userSpaceOnUse" }, defs);
    const stroke = { stroke: d.hatch_color, "stroke-width": 0.8 };
    if (hatch.startsWith("/")) el("path", { d: "M0,6L6,0M-1,1L1,-1M5,7L7,5", ...stroke }, pat);
    else if (hatch.startsWith("\\")) el("path", { d: "M0,0L6,6M-1,5L1,7M5,-1L7,1", ...stroke }, pat);
    else el("circle", { cx: 3, cy: 3, r: 0.9, fill: d.hatch_color }, pat);
  }
  const clipMap = el("clipPath", { id: `${uid}-map` }, defs);
  el("rect", { x: MAP.x, y: MAP.y, width: MAP.w, height: MAP.h }, clipMap);
  const clipPaths = el("clipPath", { id: `${uid}-paths` }, defs);
  el("rect", { x: PATHS.x, y: PATHS.y, width: PATHS.w, height: PATHS.h }, clipPaths);
  const clipLoss = el("clipPath", { id: `${uid}-loss` }, defs);
  el("rect", { x: LOSS.x, y: LOSS.y, width: LOSS.w, height: LOSS.h }, clipLoss);

  // ---- the map (cells, hatches, x marks, boundaries, ticks)
  const X = logScale(lrE[0], lrE[nLr], MAP.x, MAP.x + MAP.w);
  const Y = linear(muE[0], muE[nMu], MAP.y + MAP.h, MAP.y);
  text(svg, MAP.x, 20, d.finding, { "font-size": 13, "font-weight": "bold", class: "dv-title" });
  const cells = el("g", { class: "dv-cells" }, svg);
  const cellNodes = [];
  for (let i = 0; i < nMu; i++) for (let j = 0; j < nLr; j++) {
    const k = i * nLr + j;
    const x0 = X(lrE[j]), x1 = X(lrE[j + 1]), y0 = Y(muE[i + 1]), y1 = Y(muE[i]);
    const rect = el("rect", { x: x0, y: y0, width: x1 - x0 + 0.3, height: y1 - y0 + 0.3, fill: d.colors[k], "data-cell": `${j},${i}` }, cells);
    cellNodes.push(rect);
    const region = d.region_order[regions[k]];
    if (d.hatches[region]) el("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, fill: `url(#${uid}-h-${region})`, "pointer-events": "none" }, cells);
    if (region === "diverged") {
      const cx = (x0 + x1) / 2, cy = (y0 + y1) / 2, r = 2.6;
      el("path", { d: `M${cx - r},${cy - r}L${cx + r},${cy + r}M${cx - r},${cy + r}L${cx + r},${cy - r}`, stroke: "white", "stroke-width": 1.1, "pointer-events": "none" }, cells);
    }
  }
  for (const [l0, l1, m0, m1, k] of d.cuts) {  // where a boundary cuts a cell: the nearest run on each side
    const x0 = X(l0), x1 = X(l1), y0 = Y(m1), y1 = Y(m0), region = d.region_order[regions[k]];
    el("rect", { x: x0, y: y0, width: x1 - x0 + 0.3, height: y1 - y0 + 0.3, fill: d.colors[k], "data-shows": `${k % nLr},${Math.floor(k / nLr)}` }, cells);
    if (d.hatches[region]) el("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, fill: `url(#${uid}-h-${region})`, "pointer-events": "none" }, cells);
  }
  const bounds = el("g", { "clip-path": `url(#${uid}-map)`, "pointer-events": "none" }, svg);
  for (const r of rules) {
    const b = d.boundaries[r], bl = arr(b.lr).values, bm = arr(b.mu).values;
    const xs = Array.from(bl, X), ys = Array.from(bm, Y), pts = points(xs, ys);
    el("polyline", { points: pts, stroke: "white", "stroke-width": looks[r].width + 2.4, fill: "none" }, bounds);
    el("polyline", { points: pts, ...lineStyle(looks[r]), class: `dv-boundary dv-boundary-${r}` }, bounds);
  }
  el("rect", { x: MAP.x, y: MAP.y, width: MAP.w, height: MAP.h, fill: "none", stroke: "#444", "stroke-width": 0.8, "pointer-events": "none" }, svg);
  d.lr_ticks.forEach((t, q) => {
    const x = X(t);
    el("line", { x1: x, x2: x, y1: MAP.y + MAP.h, y2: MAP.y + MAP.h + 4, stroke: "#444" }, svg);
    text(svg, x, MAP.y + MAP.h + 16, d.lr_labels[q], { "text-anchor": "middle", "font-size": 11 });
  });
  text(svg, MAP.x + MAP.w / 2, MAP.y + MAP.h + 31, "learning rate (log scale)", { "text-anchor": "middle", "font-size": 12 });
  d.mu_ticks.forEach((t, q) => {
    const y = Y(t);
    el("line", { x1: MAP.x - 4, x2: MAP.x, y1: y, y2: y, stroke: "#444" }, svg);
    text(svg, MAP.x - 7, y + 4, d.mu_labels[q], { "text-anchor": "end", "font-size": 11 });
  });
  text(svg, 16, MAP.y + MAP.h / 2, "momentum μ", { "text-anchor": "middle", "font-size": 12, transform: `rotate(-90 16 ${MAP.y + MAP.h / 2})` });
  const pickRing = el("g", { "pointer-events": "none" }, svg);

  // ---- the colour scale and the neutral regions
  const grad = el("linearGradient", { id: `${uid}-scale` }, defs);
  d.scale.stops.forEach((c, q) => el("stop", { offset: q / (d.scale.stops.length - 1), "stop-color": c }, grad));
  el("rect", { x: BAR.x, y: BAR.y, width: BAR.w, height: BAR.h, fill: `url(#${uid}-scale)`, stroke: "#888", "stroke-width": 0.6 }, svg);
  const S = linear(-d.scale.vmax, d.scale.vmax, BAR.x, BAR.x + BAR.w);
  d.scale.ticks.forEach((t, q) => {
    el("line", { x1: S(t), x2: S(t), y1: BAR.y + BAR.h, y2: BAR.y + BAR.h + 3, stroke: "#444" }, svg);
    text(svg, S(t), BAR.y + BAR.h + 14, d.scale.labels[q], { "text-anchor": "middle", "font-size": 11.5 });
  });
  text(svg, BAR.x + BAR.w / 2, BAR.y - 5, d.scale.title, { "text-anchor": "middle", "font-size": 11.5 });
  const present = new Set(Array.from(regions, (r) => d.region_order[r]));
  let lx = MAP.x, ly = BAR.y + BAR.h + 34;
  for (const region of d.region_order.slice(1)) {
    if (!present.has(region)) continue;
    const label = d.region_names[region];
    const w = 18 + 6.2 * label.length;
    if (lx + w > MAP.x + MAP.w + 40) { lx = MAP.x; ly += 17; }
    const face = d.colors[Array.from(regions).findIndex((r) => d.region_order[r] === region)];
    el("rect", { x: lx, y: ly - 9, width: 12, height: 11, fill: face, stroke: "#888", "stroke-width": 0.6 }, svg);
    if (d.hatches[region]) el("rect", { x: lx, y: ly - 9, width: 12, height: 11, fill: `url(#${uid}-h-${region})` }, svg);
    text(svg, lx + 16, ly, label, { "font-size": 11, class: "dv-region" });
    lx += w + 10;
  }

  {  // the two lines on the map
    if (lx + 300 > MAP.x + MAP.w + 40) { lx = MAP.x; ly += 17; }
    text(svg, lx, ly, "stability boundary:", { "font-size": 11 });
    let bx = lx + 108;
    for (const r of rules) {
      el("line", { x1: bx, x2: bx + 24, y1: ly - 4, y2: ly - 4, ...lineStyle(looks[r]) }, svg);
      text(svg, bx + 28, ly, names[r], { "font-size": 11, class: "dv-boundary-name" });
      bx += 52 + 7 * names[r].length;
    }
  }

  // ---- the paths panel: contours, the minimum, both paths, the start to drag
  const F = fitBox(d.box, PATHS);
  const img = el("image", { x: F.inner.x, y: F.inner.y, width: F.inner.w, height: F.inner.h, preserveAspectRatio: "none" }, svg);
  img.setAttributeNS("http://www.w3.org/1999/xlink", "href", "data:image/png;base64," + d.contours);
  img.setAttribute("href", "data:image/png;base64," + d.contours);
  el("rect", { x: F.inner.x, y: F.inner.y, width: F.inner.w, height: F.inner.h, fill: "none", stroke: "#444", "stroke-width": 0.8 }, svg);
  const pathLayer = el("g", { "clip-path": `url(#${uid}-paths)`, class: "dv-paths", "data-box": JSON.stringify(d.box), "data-rect": JSON.stringify(F.inner) }, svg);
  el("path", { d: markerPath("star", 7), transform: `translate(${F.x(mMin[0])},${F.y(mMin[1])})`, fill: "white", stroke: "black", "stroke-width": 0.8 }, svg);
  const startNode = el("circle", { r: 6.5, fill: "white", stroke: "black", "stroke-width": 1.4, class: "dv-start", style: "cursor: grab" }, svg);
  const caption = el("g", { class: "dv-caption" }, svg);
  const side = el("g", {}, svg);

  // ---- the loss panel
  const [lo, hi] = d.loss_range;
  const LX = linear(0, maxSteps, LOSS.x, LOSS.x + LOSS.w);
  const LY = logScale(lo, hi, LOSS.y + LOSS.h, LOSS.y);
  el("rect", { x: LOSS.x, y: LOSS.y, width: LOSS.w, height: LOSS.h, fill: "none", stroke: "#444", "stroke-width": 0.8 }, svg);
  d.loss_ticks.forEach((t, q) => {
    el("line", { x1: LOSS.x - 4, x2: LOSS.x, y1: LY(t), y2: LY(t), stroke: "#444" }, svg);
    text(svg, LOSS.x - 7, LY(t) + 4, d.loss_labels[q], { "text-anchor": "end", "font-size": 11.5 });
  });
  d.update_ticks.forEach((t) => {
    el("line", { x1: LX(t), x2: LX(t), y1: LOSS.y + LOSS.h, y2: LOSS.y + LOSS.h + 4, stroke: "#444" }, svg);
    text(svg, LX(t), LOSS.y + LOSS.h + 16, String(t), { "text-anchor": "middle", "font-size": 11.5 });
  });
  text(svg, LOSS.x + LOSS.w / 2, LOSS.y + LOSS.h + 31, "updates made (k)", { "text-anchor": "middle", "font-size": 12 });
  text(svg, LOSS.x, LOSS.y - 6, fMin === 0 ? "loss after k updates (log)" : "loss after k updates − minimum (log)", { "font-size": 11.5 });
  if (tol >= lo && tol <= hi) {
    el("line", { x1: LOSS.x, x2: LOSS.x + LOSS.w, y1: LY(tol), y2: LY(tol), stroke: "#777", "stroke-dasharray": "3 3" }, svg);
    text(svg, LOSS.x + LOSS.w - 3, LY(tol) - 4, `tol ${tol}`, { "text-anchor": "end", "font-size": 11, fill: "#555" });
  }
  const lossLayer = el("g", { "clip-path": `url(#${uid}-loss)` }, svg);

  let pick = model.get("pick").slice();
  let start = model.get("start").slice();
  let computed = null;

  function clampStart(x, y) {
    const [[x0, x1], [y0, y1]] = d.box;
    return [Math.min(x1, Math.max(x0, x)), Math.min(y1, Math.max(y0, y))];
  }

  function compute() {
    const lr = lrs[pick[0]], mu = mus[pick[1]];
    const out = {};
    for (const r of rules) {
      const path = ruleRun(H, mMin, start, lr, mu, d.nesterov[r], maxSteps);
      const losses = ruleLosses(H, mMin, fMin, path);
      out[r] = { path, losses, outcome: outcome(losses, fMin, tol) };
    }
    return out;
  }

  function inBox(x, y) {
    const [[x0, x1], [y0, y1]] = d.box;
    return x >= x0 && x <= x1 && y >= y0 && y <= y1;
  }

  function drawRuns() {
    pathLayer.innerHTML = ""; lossLayer.innerHTML = ""; side.innerHTML = ""; pickRing.innerHTML = "";
    const [j, i] = pick;
    const x0 = X(lrE[j]), x1 = X(lrE[j + 1]), y0 = Y(muE[i + 1]), y1 = Y(muE[i]);
    el("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, fill: "none", stroke: "black", "stroke-width": 4.4 }, pickRing);
    el("rect", { x: x0, y: y0, width: x1 - x0, height: y1 - y0, fill: "none", stroke: "white", "stroke-width": 1.6, class: "dv-pick" }, pickRing);
    const real = model.get("real") || {};
    const realHere = real.paths && real.pick && real.pick[0] === pick[0] && real.pick[1] === pick[1] &&
      Math.abs(real.start[0] - start[0]) < 1e-9 && Math.abs(real.start[1] - start[1]) < 1e-9;
    const left = [];
    // the widest line first, the thinnest on top: a thin path on a thick one stays visible
    for (const r of [...rules].sort((p, q) => looks[q].width - looks[p].width)) {
      const { path, losses } = computed[r];
      const n = path.length / 2;
      // a diverging run up to the first point outside the view box, clipped there
      let last = n - 1, out = -1;
      if (computed[r].outcome.diverged)
        for (let k = 0; k < n; k++) if (!inBox(path[2 * k], path[2 * k + 1])) { out = k; last = k; break; }
      const xs = [], ys = [];
      for (let k = 0; k <= last; k++) { xs.push(F.x(path[2 * k])); ys.push(F.y(path[2 * k + 1])); }
      el("polyline", { points: points(xs, ys), ...lineStyle(looks[r]), class: `dv-path dv-path-${r}` }, pathLayer);
      if (out >= 0) left.push([names[r], out]);
      if (realHere) {
        const rp = arr(real.paths[r]);
        const g = el("g", { class: `dv-real dv-real-${r}` }, pathLayer);
        const stride = Math.max(1, Math.floor(rp.shape[0] / 80));
        for (let k = 0; k < rp.shape[0]; k += stride) {
          const px = rp.at(k, 0), py = rp.at(k, 1);
          if (!inBox(px, py)) continue;
          el("circle", { cx: F.x(px).toFixed(2), cy: F.y(py).toFixed(2), r: 1.7, fill: looks[r].color, stroke: "white", "stroke-width": 0.5 }, g);
        }
      }
      const lx = [], lyv = [];
      for (let k = 0; k < losses.length; k++) {
        const z = losses[k] - fMin;
        if (!(isFinite(z) && z > 0)) break;
        lx.push(LX(k)); lyv.push(LY(Math.max(lo / 10, Math.min(hi * 10, z))));
      }
      el("polyline", { points: points(lx, lyv), ...lineStyle(looks[r]), class: `dv-loss dv-loss-${r}` }, lossLayer);
    }
    startNode.setAttribute("cx", F.x(start[0])); startNode.setAttribute("cy", F.y(start[1]));
    // one note a line under the paths: where runs leave the view, one path at μ = 0, the map's start
    const notes = left.length === 2 && left[0][1] === left[1][1]
      ? [`both leave the view at update ${left[0][1]}`]
      : left.map(([who, k]) => `${who} leaves the view at update ${k}`);
    if (mus[i] === 0) notes.push("at μ = 0 both rules are plain SGD: one path");
    const moved = Math.abs(start[0] - d.start[0]) > 1e-12 || Math.abs(start[1] - d.start[1]) > 1e-12;
    if (moved) notes.push(`the map and its hover: from the start (${fmt(d.start[0])}, ${fmt(d.start[1])})`);
    if (!notes.length) notes.push("drag the white circle to move the start");
    caption.innerHTML = "";
    notes.slice(0, 4).forEach((t, q) => text(caption, PATHS.x, PATHS.y + PATHS.h + 16 + 14 * q, t, { "font-size": 11.5, fill: "#444", class: "dv-note" }));
    // the side text: the cell, each rule's outcome and its look
    const sx = PATHS.x + PATHS.w + 14;
    text(side, sx, PATHS.y + 10, `lr ${fmt(lrs[j])}, μ ${fmt(mus[i])}`, { "font-weight": "bold", class: "dv-cell-title" });
    rules.forEach((r, q) => {
      const y = PATHS.y + 36 + q * 38;
      el("line", { x1: sx, x2: sx + 26, y1: y - 4, y2: y - 4, ...lineStyle(looks[r]) }, side);
      text(side, sx + 32, y, names[r], { "font-size": 12 });
      text(side, sx + 32, y + 16, outcomeText(computed[r].outcome, maxSteps), { "font-size": 12, class: `dv-outcome dv-outcome-${r}` });
    });
    const note = realHere ? "dots: the real DTensor SGD" : real.error ? "real run failed: " + real.error.slice(0, 40) : "";
    text(side, sx, PATHS.y + 124, "lines: tf-keras' rule,", { "font-size": 11.5, fill: "#555" });
    text(side, sx, PATHS.y + 138, "run in your browser", { "font-size": 11.5, fill: "#555" });
    if (note) text(side, sx, PATHS.y + 156, note, { "font-size": 11.5, fill: "#555", class: "dv-real-note" });
  }

  function redraw() { computed = compute(); drawRuns(); }

  // ---- interaction: hover and click a cell, drag the start
  cells.addEventListener("mousemove", (ev) => {
    const c = ev.target.getAttribute && (ev.target.getAttribute("data-cell") || ev.target.getAttribute("data-shows"));
    if (!c) return tip.hide();
    const [j, i] = c.split(",").map(Number), k = i * nLr + j;
    const region = d.region_order[regions[k]];
    const lines = [`lr ${fmt(lrs[j])}, μ ${fmt(mus[i])}`];
    for (const r of rules) {
      const s = steps[r][k];
      lines.push(`${names[r]}: ${div[r][k] ? "diverges" : s < 0 ? "not within tol" : s + " updates"}`);
    }
    if (region === "both") {
      const q = ratio[k];
      lines.push(q === 0 ? "a tie" : q < 0 ? `Nesterov ${fmt(2 ** -q)}× faster` : `momentum ${fmt(2 ** q)}× faster`);
    } else lines.push(d.region_names[region]);
    const box = root.getBoundingClientRect();
    tip.show(lines.join("\n"), ev.clientX - box.left, ev.clientY - box.top);
  });
  cells.addEventListener("mouseleave", () => tip.hide());
  cells.addEventListener("click", (ev) => {
    const c = ev.target.getAttribute && (ev.target.getAttribute("data-cell") || ev.target.getAttribute("data-shows"));
    if (!c) return;
    pick = c.split(",").map(Number);
    redraw();
    model.set("pick", pick.slice());
    model.save_changes();
  });
  let dragging = false;
  function toData(ev) {
    const pt = svg.createSVGPoint();
    pt.x = ev.clientX; pt.y = ev.clientY;
    const p = pt.matrixTransform(svg.getScreenCTM().inverse());
    const s = F.scale;
    return clampStart(d.box[0][0] + (p.x - F.inner.x) / s, d.box[1][1] - (p.y - F.inner.y) / s);
  }
  startNode.addEventListener("pointerdown", (ev) => { dragging = true; startNode.setPointerCapture(ev.pointerId); ev.preventDefault(); });
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

  const onPick = () => { const p = model.get("pick"); if (p[0] !== pick[0] || p[1] !== pick[1]) { pick = p.slice(); redraw(); } };
  const onStart = () => { const s = model.get("start"); if (s[0] !== start[0] || s[1] !== start[1]) { start = s.slice(); redraw(); } };
  const onReal = () => drawRuns();
  model.on("change:pick", onPick);
  model.on("change:start", onStart);
  model.on("change:real", onReal);
  root.dtsgdRule = { ruleRun, ruleLosses, outcome, paths: () => computed };
  redraw();
  return () => { model.off("change:pick", onPick); model.off("change:start", onStart); model.off("change:real", onReal); };
}

export default { render };
