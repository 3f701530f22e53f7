// PathExplorer: the paths on the loss contours, the update shown up close (every run on
// one shared zoom, arrows at their true length; a run too small there again in an inset at
// its own, marked 1/N, as the still's), the lengths of its terms, and the loss after k
// updates. Update n is marked as plot_paths and findings mark it: the rings at the
// parameters after it, the loss panel's line and rings at k = n (d.marked_k). Every number
// comes from the state Python wrote (dtsgd_viz.web.path_state).

const W = 930, H = 790;
const PATHS = { x: 10, y: 30, w: 450, h: 450 }; // the key of its marks under it
const LOSS = { x: 545, y: 48, w: 370, h: 330 }; // the loss after k updates, tall: its decades read
const CLOSE = { x: 10, y: 540, w: 620, h: 200 }; // under the paths: one square per run, side by side, their key under them
const BARS = { x: 710, y: 540, w: 170, h: 150 }; // right of the close-ups: room right of the longest bar for its number

function decodeRuns(d) {
  const out = {};
  for (const name of d.names) {
    const r = d.runs[name];
    out[name] = {
      path: arr(r.path), pathIndex: arr(r.path_index).values, lossK: arr(r.loss_k).values, loss: arr(r.loss).values,
      position: arr(r.position), next: arr(r.next), lossAt: arr(r.loss_at).values,
      terms: r.terms || [], uvs: r.uvs ? arr(r.uvs) : null, lengths: r.lengths ? arr(r.lengths) : null,
      beside: r.beside ? arr(r.beside) : null,
      termColors: r.term_colors || {}, tint: r.tint, faint: r.faint,
    };
  }
  return out;
}

// an arrow from (x1, y1) to (x2, y2) in screen units: a shaft and a filled head whose tip is the end
// (a head of its own, not an SVG marker: some hosts drop markers), as the still's arrows; null for none
function arrow(parent, x1, y1, x2, y2, color, width, head, attrs, edge = null) {
  const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy);
  if (!(len > 0)) return null;  // a zero term: nothing
  const h = Math.min(head, 0.6 * len), ux = dx / len, uy = dy / len, hw = 0.45 * h + width / 2;
  const bx = x2 - ux * h, by = y2 - uy * h;
  const g = el("g", { class: attrs.class + "-g", "data-run": attrs["data-run"], "data-term": attrs["data-term"] }, parent);
  if (edge) el("line", { x1, y1, x2: bx, y2: by, stroke: edge, "stroke-width": width + 1.6, class: "dv-edge" }, g);  // the still's edge
  el("line", { x1, y1, x2: bx, y2: by, stroke: color, "stroke-width": width, ...attrs }, g);
  el("polygon", { points: `${x2},${y2} ${bx - uy * hw},${by + ux * hw} ${bx + uy * hw},${by - ux * hw}`, fill: color, ...(edge ? { stroke: edge, "stroke-width": 0.8 } : {}), class: "dv-head", "data-run": attrs["data-run"], "data-term": attrs["data-term"] }, g);
  return g;
}

// a text's white halo, drawn under its letters: it reads over the lines it crosses
const HALO = { stroke: "white", "stroke-width": 3, "stroke-linejoin": "round", "paint-order": "stroke" };

function render({ model, el: root }) {
  const d = model.get("data");
  const look = d.look, names = d.names, runs = decodeRuns(d);
  const updates = arr(d.updates).values, zoom = arr(d.zoom), zf = arr(d.zoom_factor).values;
  const insets = d.inset ? arr(d.inset) : null;  // (m, runs, 4): an inset's own box, NaN for none
  const markedK = d.marked_k || d.frame_index.map((k) => k + 1); // update n: the loss after n updates
  const m = updates.length;
  const uid = "dv" + Math.random().toString(36).slice(2, 8);
  // the update the model holds (a saved page: the last one Python set), else the state's first
  let index = Math.max(0, Math.min(m - 1, d.index));
  {
    const u = model.get("update");
    if (typeof u === "number" && u !== updates[index]) {
      let j = 0; for (let q = 0; q < m; q++) if (Math.abs(updates[q] - u) < Math.abs(updates[j] - u)) j = q;
      index = j;
    }
  }

  root.innerHTML = "";
  root.classList.add("dtsgd-viz", "dtsgd-viz-paths");
  Object.assign(root.style, { position: "relative", maxWidth: W + "px", font: "13px sans-serif" });

  // the headline at the update shown (findings(..., upto=n).headline(), as the still's title) over the settings
  const head = html("div", { class: "dv-headline" }, root);
  Object.assign(head.style, { fontWeight: "bold", fontSize: "15px", margin: "2px 0 0 10px" });
  if (d.settings) Object.assign(html("div", { class: "dv-settings" }, root, d.settings).style, { color: "#555", fontSize: "12px", margin: "1px 0 0 10px" });

  // controls
  const bar = html("div", { class: "dv-controls" }, root);
  Object.assign(bar.style, { display: "flex", alignItems: "center", gap: "8px", margin: "2px 0 4px 0" });
  const play = html("button", { class: "dv-play", title: "play", type: "button" }, bar, "\u25B6");
  Object.assign(play.style, { width: "34px", height: "26px", cursor: "pointer" });
  const slider = html("input", { class: "dv-slider", type: "range", min: 0, max: m - 1, step: 1, "aria-label": "update" }, bar);
  Object.assign(slider.style, { flex: "1 1 auto", maxWidth: "560px" });
  slider.value = index;
  const label = html("span", { class: "dv-label" }, bar);
  Object.assign(label.style, { minWidth: "200px", fontVariantNumeric: "tabular-nums" });

  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", class: "dv-svg", role: "img" }, root);
  svg.style.display = "block";
  const defs = el("defs", {}, svg);
  const nr = names.length, side = Math.min(CLOSE.h, (CLOSE.w - 10 * (nr - 1)) / nr);
  const closeRects = names.map((_, j) => ({ x: CLOSE.x + j * (side + 10), y: CLOSE.y, w: side, h: side }));
  // where a close-up draws its inset (Python's inset_rect: shares of its side from its upper left)
  const ir = d.inset_rect || [0.58, 0.02, 0.4, 0.4];
  const insetRects = closeRects.map((r) => ({ x: r.x + ir[0] * r.w, y: r.y + ir[1] * r.h, w: ir[2] * r.w, h: ir[3] * r.h }));
  for (const [i, rect] of [PATHS, ...closeRects, ...insetRects].entries()) {
    const cp = el("clipPath", { id: `${uid}-clip${i}` }, defs);
    el("rect", { x: rect.x, y: rect.y, width: rect.w, height: rect.h }, cp);
  }
  const tip = tooltip(root);
  const fs = look.font_px;

  // ---- the paths panel (static, then the moving parts) ----
  const main = fitBox(d.box, PATHS);
  {  // the paths panel clips to its frame
    const c = defs.querySelector(`#${uid}-clip0 rect`);
    for (const [k, v] of Object.entries(main.inner)) c.setAttribute({ w: "width", h: "height" }[k] || k, v);
  }
  const pg = el("g", { class: "dv-paths", "clip-path": `url(#${uid}-clip0)`, "data-box": JSON.stringify(d.box), "data-rect": JSON.stringify(main.inner) }, svg);
  el("image", { href: "data:image/png;base64," + d.contours, x: main.inner.x, y: main.inner.y, width: main.inner.w, height: main.inner.h, preserveAspectRatio: "none" }, pg);
  el("rect", { x: main.inner.x, y: main.inner.y, width: main.inner.w, height: main.inner.h, fill: "none", stroke: "#bbb" }, svg);
  text(svg, PATHS.x, 18, "paths on the loss contours", { "font-size": fs.title, "font-weight": "bold" });
  if (d.box_ticks) {  // ticks inside the frame's bottom and left edges, the axes named in their corners (Python's)
    const tg = el("g", { class: "dv-box-ticks" }, svg), I = main.inner, tick = { "font-size": fs.tick - 1, fill: "#333", ...HALO };
    d.box_ticks[0].forEach((t) => { const x = main.x(t); el("line", { x1: x, x2: x, y1: I.y + I.h - 5, y2: I.y + I.h, stroke: "#555" }, tg); text(tg, x, I.y + I.h - 8, fmt(t).replace("-", "\u2212"), { ...tick, "text-anchor": "middle" }); });
    d.box_ticks[1].forEach((t) => { const y = main.y(t); el("line", { x1: I.x, x2: I.x + 4, y1: y, y2: y, stroke: "#555" }, tg); text(tg, I.x + 12, y + 4, fmt(t).replace("-", "\u2212"), tick); });
    text(tg, I.x + I.w - 6, I.y + I.h - 22, d.axis_names[0], { ...tick, "text-anchor": "end", "font-style": "italic" });
    text(tg, I.x + 8, I.y + 16, d.axis_names[1], { ...tick, "font-style": "italic" });
  }
  if (d.plane !== "the parameters") text(svg, PATHS.x + PATHS.w, 18, "plane: " + d.plane, { "font-size": fs.tick, "text-anchor": "end", fill: "#555" });
  {  // the key of the marks under the panel: start, minimum, the ring of the update shown
    const ky = PATHS.y + PATHS.h + 16, cur0 = look.roles.current;
    let kx = PATHS.x + 8;
    el("path", { d: markerPath("circle", look.roles.start.size * 0.55), transform: `translate(${kx},${ky})`, fill: "white", stroke: "black", "stroke-width": 1.2 }, svg);
    text(svg, kx + 12, ky + 4, "start", { "font-size": fs.tick }); kx += 66;
    el("path", { d: markerPath("star", look.roles.minimum.size * 0.6), transform: `translate(${kx},${ky})`, fill: look.minimum_face, stroke: "black", "stroke-width": 0.8 }, svg);
    text(svg, kx + 13, ky + 4, "minimum", { "font-size": fs.tick }); kx += 92;
    // each run's ring in its colour, side by side, as the still's key draws them (grey is plain's)
    names.forEach((name, j) => el("circle", { cx: kx + 7 * j, cy: ky, r: cur0.size / 2, fill: "none", stroke: look.runs[name].color, "stroke-width": cur0.width, class: "dv-ring-key" }, svg));
    kx += 7 * (names.length - 1);
    text(svg, kx + 12, ky + 4, "after the update shown", { "font-size": fs.tick }); kx += 178;
    names.forEach((name, j) => el("line", { x1: kx + 12 * j, x2: kx + 12 * j + 12, y1: ky, y2: ky, ...restStyle(name, runs[name].tint) }, svg));  // end to end
    text(svg, kx + 12 * names.length + 3, ky + 4, d.rest_label, { "font-size": fs.tick, class: "dv-rest-key" });  // the pale paths after it
  }
  {  // under the loss panel, the key of its bars over the band
    const kx = LOSS.x, ky = LOSS.y + LOSS.h + 52;
    el("line", { x1: kx, x2: kx + 9 * names.length, y1: ky, y2: ky, stroke: d.mean_edge.color, "stroke-width": d.mean_edge.outer }, svg);  // their outline
    names.forEach((name, j) => el("line", { x1: kx + 9 * j, x2: kx + 9 * j + 9, y1: ky, y2: ky, stroke: look.runs[name].color, "stroke-width": d.mean_edge.width }, svg));  // end to end, as the stills
    text(svg, kx + 9 * names.length + 3, ky + 4, d.mean_label, { "font-size": fs.tick, class: "dv-mean-key" });
  }
  const rem = {}, trail = {}, cur = {}, start = {}, order = d.draw_order || names;
  // a path after the update shown: pale and thin, in its rule's dash scaled to that width (as the stills' rests)
  function restStyle(name, tint) {
    const rl = look.roles.remainder, lk = look.runs[name], dash = lk.dash && lk.dash.length ? lk.dash.map((v) => (v * rl.width) / lk.width).join(" ") : null;
    return { ...lineStyle(rl, tint), "stroke-dasharray": dash };
  }
  for (const name of order) {  // the widest under, as the stills draw them
    const r = runs[name], lk = look.runs[name];
    const xs = [], ys = [];
    for (let i = 0; i < r.path.shape[0]; i++) { xs.push(main.x(r.path.at(i, 0))); ys.push(main.y(r.path.at(i, 1))); }
    r.px = xs; r.py = ys;
    rem[name] = el("polyline", { points: points(xs, ys), ...restStyle(name, r.tint), "data-run": name, class: "dv-remainder" }, pg);
  }
  const casing = {};  // a thin solid path in a white casing, as the stills': it shows over the wider ones
  for (const name of order) {
    const lk = look.runs[name];
    if ((d.cased || {})[name]) casing[name] = el("polyline", { ...lineStyle(lk, "white"), "stroke-width": d.cased[name], "data-run": name, class: "dv-casing" }, pg);
    trail[name] = el("polyline", { ...lineStyle(lk), "data-run": name, class: "dv-trail" }, pg);
  }
  const st = look.roles.start;
  for (const name of names) {
    const r = runs[name];
    start[name] = el("path", { d: markerPath("circle", st.size * 0.55), transform: `translate(${r.px[0]},${r.py[0]})`, fill: "white", stroke: "black", "stroke-width": 1.2, class: "dv-start" }, pg);
  }
  for (const name of names) {
    const lk = look.runs[name];
    const ring = look.roles.current;  // the ring every static figure draws: after the update shown
    // in a white halo: it reads on its own path and over the star (the stills' ring halo)
    const halo = el("circle", { r: ring.size / 2, fill: "none", stroke: "white", "stroke-width": ring.width + 2.4, class: "dv-current-halo", "data-run": name }, pg);
    cur[name] = el("circle", { r: ring.size / 2, fill: "none", stroke: lk.color, "stroke-width": ring.width, class: "dv-current", "data-run": name }, pg);
    cur[name].halo = halo;
  }

  // the minimum over the rings (as the stills: style.ROLE_LOOKS["minimum"] over "current")
  const mn = arr(d.minima), ml = look.roles.minimum;
  for (let i = 0; i < mn.shape[0]; i++) {
    el("path", { d: markerPath("star", ml.size * 0.6), transform: `translate(${main.x(mn.at(i, 0))},${main.y(mn.at(i, 1))})`, fill: look.minimum_face, stroke: "black", "stroke-width": 0.8, class: "dv-minimum" }, pg);
  }

  // ---- the loss panel ----
  const lg = el("g", { class: "dv-loss" }, svg);
  text(svg, LOSS.x, 18, "loss after k updates" + (d.loss_range ? " (log scale)" : ""), { "font-size": fs.title, "font-weight": "bold" });
  el("rect", { x: LOSS.x, y: LOSS.y, width: LOSS.w, height: LOSS.h, fill: "none", stroke: "#bbb" }, svg);
  const lx = linear(0, d.last_update, LOSS.x, LOSS.x + LOSS.w);
  let ly = null;
  if (d.loss_range) {
    const [lo, hi] = d.loss_range, pad = Math.max(Math.log10(hi / lo) * 0.06, 0.05);
    ly = logScale(Math.min(lo / 10 ** pad, d.loss_ticks[0] ?? lo), Math.max(hi * 10 ** pad, d.loss_ticks[d.loss_ticks.length - 1] ?? hi), LOSS.y + LOSS.h, LOSS.y);  // every tick on the axis
    d.loss_ticks.forEach((t, i) => {
      const y = ly(t);
      el("line", { x1: LOSS.x - 4, x2: LOSS.x, y1: y, y2: y, stroke: "#333" }, lg);
      el("line", { x1: LOSS.x, x2: LOSS.x + LOSS.w, y1: y, y2: y, stroke: "#eee" }, lg);
      text(lg, LOSS.x - 6, y + 4, d.loss_labels[i], { "font-size": fs.tick, "text-anchor": "end" });
    });
  }
  d.update_ticks.forEach((t) => {
    const x = lx(t);
    el("line", { x1: x, x2: x, y1: LOSS.y + LOSS.h, y2: LOSS.y + LOSS.h + 4, stroke: "#333" }, lg);
    text(lg, x, LOSS.y + LOSS.h + 16, String(t), { "font-size": fs.tick, "text-anchor": "middle" });
  });
  text(lg, LOSS.x + LOSS.w / 2, LOSS.y + LOSS.h + 32, d.loss_xlabel, { "font-size": fs.tick, "text-anchor": "middle", fill: "#333", class: "dv-loss-xlabel" });
  const dots = {};
  if (ly) {
    for (const name of order) {
      const r = runs[name];
      const xs = Array.from(r.lossK, lx), ys = Array.from(r.loss, (v) => (v > 0 ? ly(v) : NaN));
      el("polyline", { points: points(xs, ys), ...lineStyle(look.runs[name]), "data-run": name, class: "dv-loss-line" }, lg);
    }
  }
  // the loss after the update shown faded, as the paths after it are (the still's white veil, d.later_veil)
  const veil = el("rect", { y: LOSS.y, height: LOSS.h, fill: "white", opacity: d.later_veil ?? 0, class: "dv-loss-later" }, lg);
  const stepLine = el("line", { y1: LOSS.y, y2: LOSS.y + LOSS.h, ...lineStyle(look.roles.update_line), class: "dv-update-line" }, lg);
  // the pale band of the updates whose mean loss the headline compares (findings' window), under the lines
  const band = el("rect", { y: LOSS.y, height: LOSS.h, fill: "#8c8c8c", opacity: 0.12, class: "dv-mean-band" });
  lg.insertBefore(band, lg.querySelector("polyline.dv-loss-line"));
  // each run's mean over the band, as the still's bars: dark-outlined (mean_edge), in the run's colour, under the rings
  const means = {};
  for (const name of names) {
    const halo = el("line", { stroke: d.mean_edge.color, "stroke-width": d.mean_edge.outer, class: "dv-mean-halo", "data-run": name }, lg);
    means[name] = [halo, el("line", { stroke: look.runs[name].color, "stroke-width": d.mean_edge.width, class: "dv-mean", "data-run": name }, lg)];
  }
  // the update shown: a ring at the loss after it, in the look every still rings it (style.ROLE_LOOKS["current"])
  for (const name of names) {
    const ring = look.roles.current;
    dots[name] = el("circle", { r: ring.size / 2, fill: "none", stroke: look.runs[name].color, "stroke-width": ring.width, class: "dv-loss-dot", "data-run": name }, lg);
  }
  // legend: one sample per run, in its look, in a row over the loss panel
  names.forEach((name, j) => {
    const y = LOSS.y - 12, x = LOSS.x + j * (LOSS.w / Math.max(3, nr));
    el("line", { x1: x, x2: x + 28, y1: y, y2: y, ...lineStyle(look.runs[name]) }, lg);
    text(lg, x + 34, y + 4, d.rule_names[name], { "font-size": fs.tick });
  });

  // ---- the close-ups (one per run, one scale) and the term lengths ----
  const cgs = names.map((name, j) => {
    const r = closeRects[j];
    el("rect", { x: r.x, y: r.y, width: r.w, height: r.h, fill: "none", stroke: "#bbb" }, svg);
    text(svg, r.x + 4, r.y + 13, d.rule_names[name], { "font-size": fs.tick, fill: look.runs[name].color, "font-weight": "bold", class: "dv-close-name", ...HALO });
    return el("g", { class: "dv-close", "data-run": name, "clip-path": `url(#${uid}-clip${j + 1})` }, svg);
  });
  // the run names over the drawing (moved after it: SVG paints in order)
  for (const t of svg.querySelectorAll("text.dv-close-name")) svg.appendChild(t);
  const closeTitle = text(svg, CLOSE.x, CLOSE.y - 10, "", { "font-size": fs.title, "font-weight": "bold", class: "dv-close-title" });
  const bg = el("g", { class: "dv-bars" }, svg);

  // the marks of the close-ups, named as the still's key names them (d.close_key), two to a row under them
  // (at fixed places: words measured before their font loads come out short)
  if (d.close_key) {
    const kg = el("g", { class: "dv-close-key" }, svg);
    d.close_key.forEach((entry, q) => {
      const kx = CLOSE.x + 8 + (q % 2) * 290, ky = CLOSE.y + side + 18 + 16 * Math.floor(q / 2);
      const g = el("g", { class: "dv-close-key-entry", "data-mark": entry.mark, transform: `translate(${kx},${ky})` }, kg);
      if (entry.mark === "before") (entry.colors || [entry.color]).forEach((c, j, all) => el("circle", { cx: all.length > 1 ? 3.5 + 6 * j : 9, cy: 0, r: 3.5, fill: "white", stroke: c, "stroke-width": 1.4 }, g));  // each run's disk
      else if (entry.mark === "after") (entry.colors || [entry.color]).forEach((c, j, all) => el("circle", { cx: all.length > 1 ? 3.5 + 6 * j : 9, cy: 0, r: 4, fill: "none", stroke: c, "stroke-width": 1.4 }, g));
      else (entry.colors || [entry.color]).forEach((c, j, all) => el("line", { x1: 18 * j / all.length, x2: 18 * (j + 1) / all.length, y1: 0, y2: 0, stroke: c, "stroke-width": entry.width }, g));  // the step: each run's colour, end to end
      if (entry.mark === "trail") (entry.colors || [entry.color]).forEach((c, j, all) => el("circle", { cx: 18 * (j + 0.5) / all.length, cy: 0, r: d.trail_dot, fill: c }, g));  // its dots
      text(g, 24, 4, entry.text, { "font-size": fs.tick, fill: "#333" });
    });
  }

  // a term's name beside the middle of its arrow, 10 px out on the side away from (cx, cy): the other arrows;
  // in a white halo, over the lines it sits beside
  function termLabel(cg, x1, y1, x2, y2, cx, cy, s, color, name, t, size, bounds, always, moved) {
    const len = Math.hypot(x2 - x1, y2 - y1), need = 0.56 * size * s.length + 12;
    if (len < need && !always) return;  // an inset names every arrow, as the still's
    let nx = -(y2 - y1) / len, ny = (x2 - x1) / len;
    if (moved ? nx * moved[0] + ny * moved[1] < 0 : nx * ((x1 + x2) / 2 - cx) + ny * ((y1 + y2) / 2 - cy) < 0) { nx = -nx; ny = -ny; }
    const mx = (x1 + x2) / 2 + 10 * nx, my = (y1 + y2) / 2 + 10 * ny;
    const label = text(cg, mx, my + 4 + 4 * ny, s, { "font-size": size, fill: color, "font-weight": t === "gradient" ? "normal" : "bold", "text-anchor": Math.abs(nx) < 0.3 ? "middle" : nx > 0 ? "start" : "end", class: "dv-term-label", "data-run": name, "data-term": t, ...HALO });
    // slid back inside its panel where it sticks out (as the still's keep_labels_inside): where the words end
    // is the browser's to measure
    let b = null;
    try { b = label.getBBox(); } catch (e) { b = null; }
    if (!b || !(b.width > 0)) return;
    const pad = 3, dx = Math.max(0, bounds.x + pad - b.x) - Math.max(0, b.x + b.width - (bounds.x + bounds.w - pad));
    const dy = Math.max(0, bounds.y + pad - b.y) - Math.max(0, b.y + b.height - (bounds.y + bounds.h - pad));
    if (dx || dy) { label.setAttribute("x", mx + dx); label.setAttribute("y", my + 4 + 4 * ny + dy); }
  }

  // one run's update i on the map f: the path so far (pale, thin), the white disk where it starts, the ring it
  // reaches (an inset's too, as the still's), the terms tip to tail as arrows and, for two, the step line
  function drawUpdate(cg, f, r, i, name, lk, inset, bounds) {
    const xs = [], ys = [];
    for (let k = 0; k < r.path.shape[0] && r.pathIndex[k] <= d.frame_index[i]; k++) {  // up to where update n starts,
      if (d.trail_keep != null && r.pathIndex[k] < d.frame_index[i] - d.trail_keep) continue;  // its last segments (the still's)
      xs.push(f.x(r.path.at(k, 0))); ys.push(f.y(r.path.at(k, 1)));
    }
    xs.push(f.x(r.position.at(i, 0))); ys.push(f.y(r.position.at(i, 1)));
    el("polyline", { points: points(xs, ys), ...(r.faint ? lineStyle(r.faint) : { ...lineStyle(lk), opacity: 0.3 }), class: "dv-close-path", "data-run": name }, cg);
    // a dot at each update's point before (the white disk is the last), as the still's: points taken, unlike the
    // pale lines of the updates after the one shown
    const dot = r.faint ? r.faint.color : lk.color;
    for (let k = 0; k + 1 < xs.length; k++) {
      if (isFinite(xs[k]) && isFinite(ys[k])) el("circle", { cx: xs[k].toFixed(2), cy: ys[k].toFixed(2), r: d.trail_dot, fill: dot, class: "dv-close-dot", "data-run": name }, cg);
    }
    // after the update: a small thin ring under the arrows (as the still), their heads read over it
    el("circle", { cx: f.x(r.next.at(i, 0)), cy: f.y(r.next.at(i, 1)), r: inset ? 4 * d.inset_ring : 4, fill: "none", stroke: lk.color, "stroke-width": 1.4, class: inset ? "dv-inset-next" : "dv-next" }, cg);
    let px = r.position.at(i, 0), py = r.position.at(i, 1);
    // the terms tip to tail (a zero one, as mu*v_prev at update 1, draws nothing), then the thin step line they add
    // up to when two are drawn, each named beside it where it is long enough to carry its name (as the still)
    const x0 = px, y0 = py;
    let cx = 0, cy = 0, drawn = 0;  // the middle of the arrows' points, on screen: each name goes on the far side
    { let sx = px, sy = py; cx = f.x(sx); cy = f.y(sy);
      r.terms.forEach((t, q) => { sx += r.uvs.at(i, q, 0); sy += r.uvs.at(i, q, 1); cx += f.x(sx); cy += f.y(sy); });
      cx /= r.terms.length + 1; cy /= r.terms.length + 1; }
    const labels = [], under = el("g", { class: "dv-under" }, cg);  // the step line goes under the arrows
    let before = null;  // the last arrow on screen: one Python marks as lying along it is drawn just beside it
    r.terms.forEach((t, q) => {
      const u = [r.uvs.at(i, q, 0), r.uvs.at(i, q, 1)], qx = px + u[0], qy = py + u[1];
      const b = [f.x(qx) - f.x(px), f.y(qy) - f.y(py)];
      let dx = 0, dy = 0;  // as the still's beside_folds: parallel, to the side it turns to, clear of the head
      const na = before ? Math.hypot(before[0], before[1]) : 0;
      if (na > 0 && r.beside && r.beside.at(i, q)) {  // panel.lies_along, computed in Python
        const s = (before[0] * b[1] - before[1] * b[0] >= 0 ? 1 : -1) * (inset ? 5 : 6.5) / na;
        dx = -before[1] * s; dy = before[0] * s;
      }
      const a = arrow(cg, f.x(px) + dx, f.y(py) + dy, f.x(qx) + dx, f.y(qy) + dy, r.termColors[t], inset ? 1.8 : 2.4, inset ? 7 : 9, { class: inset ? "dv-inset-arrow" : "dv-arrow", "data-run": name, "data-term": t, "data-uv": JSON.stringify(u) }, lk.color);
      // a term moved beside the one before is named on the side it was moved to, off the other's shaft and head
      if (a) { drawn += 1; labels.push([f.x(px) + dx, f.y(py) + dy, f.x(qx) + dx, f.y(qy) + dy, t, dx || dy ? [dx, dy] : null]); before = b; }
      px = qx; py = qy;
    });
    // where update n starts, g taken there: a small white disk over the arrows' tails (they run from here to the ring)
    el("circle", { cx: f.x(x0), cy: f.y(y0), r: inset ? 3 : 3.5, fill: "white", stroke: lk.color, "stroke-width": 1.4, class: "dv-before", "data-run": name }, cg);
    if (drawn > 1) {
      const u = [px - x0, py - y0];
      // a plain line, as the still's: the arrows' heads already say which way it goes
      el("line", { x1: f.x(x0), y1: f.y(y0), x2: f.x(px), y2: f.y(py), stroke: lk.color, "stroke-width": 1.1, opacity: 0.9, class: inset ? "dv-inset-step" : "dv-step", "data-run": name, "data-term": "step", "data-uv": JSON.stringify(u) }, under);
    }
    const size = inset ? Math.max(11, 0.85 * fs.tick) : fs.tick;  // an inset's names smaller, as the still's, not under 11 px
    for (const [a, b, c, e, t, moved] of labels) termLabel(cg, a, b, c, e, cx, cy, d.term_names[t], lk.color, name, t, size, bounds, inset, moved);
  }

  function closeUp(i) {
    names.forEach((name, j) => {
      const cg = cgs[j];
      cg.innerHTML = "";
      const zb = [[zoom.at(i, j, 0), zoom.at(i, j, 1)], [zoom.at(i, j, 2), zoom.at(i, j, 3)]];
      if (!isFinite(zb[0][0])) return;
      const f = fitBox(zb, closeRects[j]);
      cg.setAttribute("data-box", JSON.stringify(zb));
      cg.setAttribute("data-rect", JSON.stringify(closeRects[j]));
      const r = runs[name], lk = look.runs[name];
      drawUpdate(cg, f, r, i, name, lk, false, { ...closeRects[j], y: closeRects[j].y + 16, h: closeRects[j].h - 16 });
      // an update too small at the shared zoom: drawn again at its own in an inset marked 1/N (as the still,
      // views.update.zoom.draw_inset), a dotted box round what it enlarges; Python chose it and its box
      const ib = insets ? [[insets.at(i, j, 0), insets.at(i, j, 1)], [insets.at(i, j, 2), insets.at(i, j, 3)]] : null;
      if (!ib || !isFinite(ib[0][0])) return;
      for (const t of cg.querySelectorAll("text.dv-term-label")) t.remove();  // named in its inset only
      const rect = insetRects[j];
      // what it enlarges, over the marks however small, and a dotted leader from it to the inset's corner (the still's)
      const bw = (ib[0][1] - ib[0][0]) * f.scale, bh = (ib[1][1] - ib[1][0]) * f.scale, bx = f.x(ib[0][0]), by = f.y(ib[1][1]);
      el("rect", { x: bx, y: by, width: bw, height: bh, fill: "none", stroke: lk.color, "stroke-width": 1.2, "stroke-dasharray": "1.5 2", class: "dv-inset-box", "data-run": name }, cg);
      el("line", { x1: bx + bw, y1: by, x2: rect.x, y2: rect.y + rect.h, stroke: lk.color, "stroke-width": 1.2, "stroke-dasharray": "1.5 2", class: "dv-inset-leader", "data-run": name }, cg);
      const ig = el("g", { class: "dv-inset", "data-run": name, "data-box": JSON.stringify(ib), "data-rect": JSON.stringify(rect) }, cg);
      el("rect", { x: rect.x, y: rect.y, width: rect.w, height: rect.h, fill: "white", stroke: lk.color, "stroke-width": 1.2 }, ig);
      const inner = el("g", { "clip-path": `url(#${uid}-clip${1 + nr + j})` }, ig);
      drawUpdate(inner, fitBox(ib, rect), r, i, name, lk, true, { ...rect, y: rect.y + 16, h: rect.h - 16 });  // under its 1/N
      text(ig, rect.x + 4, rect.y + 13, d.inset_text[i][j], { "font-size": fs.tick, fill: lk.color, "font-weight": "bold", class: "dv-inset-zoom", "data-run": name, ...HALO });
    });
    // the shared zoom as the still's caption says it (views.update.zoom.shared_factor, times)
    closeTitle.textContent = `update ${updates[i]}`;
    if (isFinite(zf[i])) {  // the zoom in the notes' size: the close-ups are narrower than the words in bold
      el("tspan", { "font-size": fs.tick, "font-weight": "normal" }, closeTitle).textContent =
        `, every panel spans ${d.zoom_text[i]} of the paths' width`;
    }
    closeTitle.setAttribute("data-zoom", zf[i]);
  }

  // the lengths of the terms and of the step, every run on one axis
  const have = names.filter((n) => runs[n].lengths);
  const rows = [];
  for (const t of ["momentum", "lookahead", "gradient"]) if (have.some((n) => runs[n].terms.includes(t))) rows.push({ key: t, label: "|" + d.term_names[t] + "|" });
  if (have.length) rows.push({ key: "step", label: "|step|" });
  text(svg, BARS.x - 55, BARS.y - 10, "lengths at the update shown", { "font-size": fs.title, "font-weight": "bold" });
  if (have.length) {  // the bars' key: a bar per run, in its colour, its length in parameter units; one a line
    const kx = BARS.x - 55;
    let ky = BARS.y + BARS.h + 14;
    for (const n of have) {
      el("rect", { x: kx, y: ky - 8, width: 14, height: 8, fill: look.runs[n].color, class: "dv-bar-key", "data-run": n }, svg);
      text(svg, kx + 18, ky, d.rule_names[n], { "font-size": fs.tick });
      ky += 15;
    }
    text(svg, kx, ky + 2, "length in parameter units", { "font-size": fs.tick, fill: "#555", class: "dv-bar-units" });
  }
  function bars(i) {
    bg.innerHTML = "";
    if (!have.length) { text(bg, BARS.x, BARS.y + 14, "(velocity and gradient not recorded)", { "font-size": fs.tick, fill: "#555" }); return; }
    let top = 0;
    for (const n of have) for (let q = 0; q < runs[n].lengths.shape[1]; q++) { const v = runs[n].lengths.at(i, q); if (isFinite(v)) top = Math.max(top, v); }
    // a slot only for a run that has the row's term, each tall enough for its number
    const term = (n, key) => (key === "step" ? runs[n].lengths.shape[1] - 1 : runs[n].terms.indexOf(key));
    const slots = rows.map((row) => have.filter((n) => term(n, row.key) >= 0));
    const bh = Math.max(3, Math.min(14, (BARS.h - 6 * rows.length) / slots.flat().length));
    let y = BARS.y;
    rows.forEach((row, j) => {
      text(bg, BARS.x - 6, y + (bh * slots[j].length) / 2 + 4, row.label, { "font-size": fs.tick, "text-anchor": "end" });
      for (const n of slots[j]) {
        const r = runs[n], v = r.lengths.at(i, term(n, row.key));
        const w = top > 0 && isFinite(v) ? (v / top) * BARS.w : 0, bar = Math.max(2, bh - 4);
        // filled as the still's bars: a momentum term solid, the gradient's its tint, the step open; edged in the run's colour
        const fill = row.key === "step" ? "white" : (r.termColors || {})[row.key] || look.runs[n].color;
        const b = el("rect", { x: BARS.x, y, width: Math.max(w, 0.8), height: bar, fill, stroke: look.runs[n].color, "stroke-width": 1, class: "dv-bar", "data-run": n, "data-term": row.key, "data-value": v }, bg);
        text(bg, BARS.x + Math.max(w, 0.8) + 3, y + bar / 2 + 4, fmt(v), { "font-size": Math.min(fs.tick, bh - 2), fill: "#333", class: "dv-bar-value", "data-run": n, "data-term": row.key });
        b.addEventListener("mousemove", (ev) => tip.show(`${d.rule_names[n]}, update ${updates[i]}\n${row.label} = ${fmt(v)}`, ...local(ev)));
        b.addEventListener("mouseleave", () => tip.hide());
        y += bh;
      }
      y += 6;
    });
  }

  function show(i) {
    index = i;
    const u = updates[i];
    for (const name of names) {
      const r = runs[name];
      const xs = [], ys = [];
      for (let k = 0; k < r.px.length && r.pathIndex[k] <= d.frame_index[i]; k++) { xs.push(r.px[k]); ys.push(r.py[k]); }
      xs.push(main.x(r.position.at(i, 0))); ys.push(main.y(r.position.at(i, 1)));
      const cx = main.x(r.next.at(i, 0)), cy = main.y(r.next.at(i, 1));  // the ring: after update u
      xs.push(cx); ys.push(cy);
      trail[name].setAttribute("points", points(xs, ys));
      if (casing[name]) casing[name].setAttribute("points", points(xs, ys));
      cur[name].setAttribute("cx", cx); cur[name].setAttribute("cy", cy);
      cur[name].halo.setAttribute("cx", cx); cur[name].halo.setAttribute("cy", cy);
      cur[name].setAttribute("data-x", r.next.at(i, 0));
      cur[name].setAttribute("data-y", r.next.at(i, 1));
      cur[name].setAttribute("data-update", u);
      if (ly) {
        // the loss ring: the loss after markedK[i] = u updates, at the ring (as plot_paths and findings)
        const v = r.lossAt[i];
        dots[name].setAttribute("cx", lx(markedK[i]));
        dots[name].setAttribute("data-k", markedK[i]);
        dots[name].setAttribute("cy", v > 0 ? ly(v) : -99);
        dots[name].setAttribute("data-loss", v);
      }
    }
    stepLine.setAttribute("x1", lx(markedK[i])); stepLine.setAttribute("x2", lx(markedK[i]));
    veil.setAttribute("x", lx(markedK[i])); veil.setAttribute("width", Math.max(0, LOSS.x + LOSS.w - lx(markedK[i])));
    stepLine.setAttribute("data-k", markedK[i]);
    if (d.mean_window) {
      const [a, b] = d.mean_window[i], half = a === b ? 0.5 : 0;
      band.setAttribute("x", lx(a - half)); band.setAttribute("width", Math.max(1, lx(b + half) - lx(a - half)));
      band.setAttribute("data-window", JSON.stringify([a, b]));
      for (const name of names) {  // each run's mean over it, a bar in its colour (the still's mean_look)
        const m = (d.mean_loss || {})[name]?.[i], on = ly && m != null && m > 0;
        // a bar ending at the update shown stops short of its ring (as the still's mark_mean): no tick through it
        const x1 = lx(a - half), ringX = lx(markedK[i]), clear = look.roles.current.size / 2 + 2;
        let x2 = lx(b + half);
        if (Math.abs(x2 - ringX) < clear) x2 = Math.max(x1 + 3, ringX - clear);
        for (const bar of means[name]) {
          bar.setAttribute("x1", x1); bar.setAttribute("x2", x2);
          bar.setAttribute("y1", on ? ly(m) : -99); bar.setAttribute("y2", on ? ly(m) : -99);
        }
        means[name][1].setAttribute("data-mean", on ? m : "");
      }
    }
    closeUp(i);
    bars(i);
    if (d.headlines) head.textContent = d.headlines[i];
    slider.value = i;
    label.textContent = updates.length === d.n_updates ? `update ${u} of ${d.last_update}` : `update ${u} (${i + 1} of ${m} shown of ${d.n_updates})`;
  }

  function local(ev) {
    const b = root.getBoundingClientRect();
    return [ev.clientX - b.left, ev.clientY - b.top];
  }
  function toSvg(ev) {
    const b = svg.getBoundingClientRect();
    return [((ev.clientX - b.left) / b.width) * W, ((ev.clientY - b.top) / b.height) * H];
  }

  // hover on the paths: the nearest point of any run (pixels), what it is
  svg.addEventListener("mousemove", (ev) => {
    const [sx, sy] = toSvg(ev);
    if (sx >= PATHS.x && sx <= PATHS.x + PATHS.w && sy >= PATHS.y && sy <= PATHS.y + PATHS.h) {
      let best = null;
      for (const name of names) {
        const r = runs[name];
        for (let k = 0; k < r.px.length; k++) {
          const dd = (r.px[k] - sx) ** 2 + (r.py[k] - sy) ** 2;
          if (dd < 144 && (!best || dd < best.dd)) best = { dd, name, k };
        }
      }
      if (best) {
        const r = runs[best.name], kk = r.lossK[best.k];
        const next = Math.max(1, kk);  // the update whose ring is at this point (the start: update 1)
        tip.show(`${d.rule_names[best.name]}\nafter ${kk} update${kk === 1 ? "" : "s"}: loss ${fmt(r.loss[best.k])}\n(click: show update ${next})`, ...local(ev));
        svg.style.cursor = "pointer";
        svg.dataset.hover = JSON.stringify([best.name, next]);
        return;
      }
    } else if (ly && sx >= LOSS.x && sx <= LOSS.x + LOSS.w && sy >= LOSS.y && sy <= LOSS.y + LOSS.h) {
      const k = Math.round(linear(LOSS.x, LOSS.x + LOSS.w, 0, d.last_update)(sx));
      let j = 0; for (let q = 0; q < m; q++) if (Math.abs(markedK[q] - k) < Math.abs(markedK[j] - k)) j = q;
      const kk = markedK[j];
      tip.show(`after ${kk} update${kk === 1 ? "" : "s"}:\n` + names.map((n) => `${d.rule_names[n]}  ${fmt(runs[n].lossAt[j])}`).join("\n") + `\n(click: show update ${updates[j]})`, ...local(ev));
      svg.dataset.hover = JSON.stringify(["loss", updates[j]]);
      return;
    }
    tip.hide(); svg.style.cursor = ""; delete svg.dataset.hover;
  });
  svg.addEventListener("mouseleave", () => tip.hide());
  svg.addEventListener("click", () => {
    if (!svg.dataset.hover) return;
    const [, u] = JSON.parse(svg.dataset.hover);
    let j = 0; for (let q = 0; q < m; q++) if (Math.abs(updates[q] - u) < Math.abs(updates[j] - u)) j = q;
    move(j);
  });

  function move(i) {
    show(i);
    model.set("update", updates[i]);
    model.save_changes();
  }
  slider.addEventListener("input", () => move(+slider.value));
  let timer = null;
  const stride = Math.max(1, Math.floor(m / 200));
  function stop() { clearInterval(timer); timer = null; play.textContent = "\u25B6"; play.title = "play"; }
  play.addEventListener("click", () => {
    if (timer) return stop();
    if (index >= m - 1) move(0);
    play.textContent = "\u275A\u275A"; play.title = "pause";
    timer = setInterval(() => { if (index >= m - 1) return stop(); move(Math.min(m - 1, index + stride)); }, 100);
  });
  const onUpdate = () => {
    const u = model.get("update");
    let j = 0; for (let q = 0; q < m; q++) if (Math.abs(updates[q] - u) < Math.abs(updates[j] - u)) j = q;
    if (j !== index) show(j);
  };
  model.on("change:update", onUpdate);
  show(index);
  return () => { stop(); model.off("change:update", onUpdate); };
}

export default { render };
