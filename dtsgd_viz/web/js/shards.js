// ShardExplorer: a recorded tensor at one update, each device's block outlined, beside
// each block's L2 norm over the updates. Every number comes from the state Python wrote
// (dtsgd_viz.web.shard_state); this module maps them to pixels and colours.

const W = 930;

function lutIndex(v, limit, n) {
  // the colour table's bin of value v on the scale -limit..limit (the state's bins)
  const k = Math.floor(((v + limit) / (2 * limit)) * n);
  return Math.max(0, Math.min(n - 1, k));
}

function hexRgb(h) {
  return [parseInt(h.slice(1, 3), 16), parseInt(h.slice(3, 5), 16), parseInt(h.slice(5, 7), 16)];
}

function render({ model, el: root }) {
  const d = model.get("data");
  const names = d.names, nr = names.length, look = d.look, fs = look.font_px;
  const updates = arr(d.updates).values, m = updates.length;
  // the norm lines keep every update (the values may keep fewer); normAt[i]: frame i's point
  const nUpdates = d.norm_updates ? arr(d.norm_updates).values : updates, mN = nUpdates.length;
  const normAt = d.norm_index || Array.from(updates, (_, i) => i);
  const lut = d.lut.map(hexRgb), bad = hexRgb(d.nonfinite_color);
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
  let variable = d.variables.includes(model.get("variable")) ? model.get("variable") : d.variable;
  let kind = d.kinds.includes(model.get("kind")) ? model.get("kind") : d.shown_kind;
  let fixed = true;

  root.innerHTML = "";
  root.classList.add("dtsgd-viz", "dtsgd-viz-shards");
  Object.assign(root.style, { position: "relative", maxWidth: W + "px", font: "13px sans-serif" });

  // ---- controls ----
  const row1 = html("div", { class: "dv-controls" }, root);
  Object.assign(row1.style, { display: "flex", alignItems: "center", gap: "10px", margin: "2px 0 4px 0" });
  const pick = (label, cls, options, value) => {
    const wrap = html("label", {}, row1, label + " ");
    const s = html("select", { class: cls, "aria-label": label }, wrap);
    s.style.minWidth = "90px";
    for (const o of options) html("option", { value: o }, s, o);
    s.value = value;
    return s;
  };
  const varSel = pick("variable", "dv-variable", d.variables, variable);
  const kindSel = pick("kind", "dv-kind", d.kinds, kind);
  const fixWrap = html("label", {}, row1);
  const fixBox = html("input", { type: "checkbox", class: "dv-fixed" }, fixWrap);
  fixBox.checked = fixed;
  fixWrap.appendChild(document.createTextNode(" colour scale fixed over the run"));
  if (d.stats_only) fixWrap.style.display = "none";
  const row2 = html("div", { class: "dv-controls" }, root);
  Object.assign(row2.style, { display: "flex", alignItems: "center", gap: "8px", margin: "0 0 4px 0" });
  const play = html("button", { class: "dv-play", title: "play", type: "button" }, row2, "\u25B6");
  Object.assign(play.style, { width: "34px", height: "26px", cursor: "pointer" });
  const slider = html("input", { class: "dv-slider", type: "range", min: 0, max: m - 1, step: 1, "aria-label": "update" }, row2);
  Object.assign(slider.style, { flex: "1 1 auto", maxWidth: "600px" });
  slider.value = index;
  const label = html("span", { class: "dv-label" }, row2);
  Object.assign(label.style, { minWidth: "200px", fontVariantNumeric: "tabular-nums" });

  const svg = el("svg", { width: "100%", class: "dv-svg", role: "img" }, root);
  svg.style.display = "block";
  const tip = tooltip(root);
  let scene = null; // what the current variable and kind draw

  function local(ev) {
    const b = root.getBoundingClientRect();
    return [ev.clientX - b.left, ev.clientY - b.top];
  }
  function toSvg(ev) {
    const b = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
    return [((ev.clientX - b.left) / b.width) * vb.width, ((ev.clientY - b.top) / b.height) * vb.height];
  }

  // the rectangle a heatmap of `image` [rows, cols] takes in `box`: square cells, or the
  // state's box aspect for flat and tall tensors
  function heatRect(t, box) {
    const [rows, cols] = t.image;
    let w = box.w, h = t.box_aspect === null ? (box.w * rows) / cols : box.w * t.box_aspect;
    if (h > box.h) { w *= box.h / h; h = box.h; }
    return { x: box.x + (box.w - w) / 2, y: box.y + (box.h - h) / 2, w, h };
  }

  function build() {
    svg.innerHTML = "";
    tip.hide();
    root.querySelectorAll("canvas.dv-cells").forEach((c) => c.remove());
    const t = d.tensors[variable], k = t.kinds[kind];
    const [rows, cols] = t.image;
    const keepR = arr(t.rows).values, keepC = arr(t.cols).values;
    const single = nr === 1;
    const H = single ? 380 : 500;
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    const defs = el("defs", {}, svg);
    // panels: one run: heatmap left, norms right; runs: heatmaps in a row, norms below
    const heatBoxes = single
      ? [{ x: 62, y: 40, w: 400, h: 290 }]
      : names.map((_, j) => { const w = (W - 70 - 90 * nr) / nr; return { x: 62 + j * (w + 90), y: 44, w, h: 230 }; });
    const NORM = single ? { x: 592, y: 40, w: 320, h: 290 } : { x: 62, y: 330, w: W - 90, h: 120 };
    const runs = names.map((name, j) => {
      const r = k.runs[name];
      return {
        name, rect: heatRect(t, heatBoxes[j]),
        values: r.values ? arr(r.values) : null,
        lo: r.min ? arr(r.min).values : null, hi: r.max ? arr(r.max).values : null,
        norms: arr(r.norms),
      };
    });
    const updLimit = k.update_limit ? arr(k.update_limit).values : null;
    const title = text(svg, 10, 16, "", { "font-size": fs.title, "font-weight": "bold", class: "dv-title" });
    // a tensor larger than its panel is drawn from every k-th row or column: said, not hidden
    const kept = [];
    if (t.rows.shape[0] < t.image[0]) kept.push(`${t.rows.shape[0]} of ${t.image[0]} rows`);
    if (t.cols.shape[0] < t.image[1]) kept.push(`${t.cols.shape[0]} of ${t.image[1]} columns`);
    text(svg, W - 10, 16, t.layout, { "font-size": fs.tick, "text-anchor": "end", fill: "#555", class: "dv-layout" });
    if (kept.length) text(svg, W - 10, 32, `drawn: ${kept.join(", ")} (hover: each cell's element)`, { "font-size": fs.tick, "text-anchor": "end", fill: "#555", class: "dv-sampled" });

    const heat = runs.map((r, j) => {
      const R = r.rect, g = el("g", { class: "dv-heat", "data-run": r.name, "data-rect": JSON.stringify(R) }, svg);
      if (!single) text(svg, R.x, R.y - 8, r.name, { "font-size": fs.label, "font-weight": "bold", fill: look.runs[r.name].color });
      const cp = el("clipPath", { id: `${uid}-c${j}` }, defs);
      el("rect", { x: R.x, y: R.y, width: R.w, height: R.h }, cp);
      let canvas = null, ctx = null, img = null, pixels = null;
      if (r.values) {
        const [, rr, cc] = r.values.shape;
        canvas = html("canvas", { class: "dv-cells", "data-run": r.name, width: cc, height: rr }, root);
        canvas.style.display = "none";
        ctx = canvas.getContext("2d");
        pixels = ctx.createImageData(cc, rr);
        img = el("image", { x: R.x, y: R.y, width: R.w, height: R.h, preserveAspectRatio: "none", class: "dv-cells-image" }, g);
        img.style.imageRendering = "pixelated";
      }
      // the blocks: tinted where no values were recorded, outlined, labelled if they fit
      const sx = R.w / cols, sy = R.h / rows;
      const outlines = t.blocks.map((b) => {
        const og = el("g", { class: "dv-block", "data-group": b.group, "data-run": r.name }, g);
        for (const [x, y, w, h] of b.rects) {
          if (!r.values) el("rect", { x: R.x + x * sx, y: R.y + y * sy, width: w * sx, height: h * sy, fill: b.color, opacity: 0.35 }, og);
          el("rect", { x: R.x + x * sx, y: R.y + y * sy, width: w * sx, height: h * sy, fill: "none", stroke: "black", "stroke-width": 1.5, class: "dv-outline" }, og);
        }
        return og;
      });
      for (const y of t.slice_rows) el("line", { x1: R.x, x2: R.x + R.w, y1: R.y + y * sy, y2: R.y + y * sy, stroke: "white", "stroke-width": 2 }, g);
      const chipH = 15;
      for (const b of t.blocks) {
        const [x, y, w, h] = b.rects[Math.floor(b.rects.length / 2)];
        const cw = b.label.length * 6.6 + 8;
        if (w * sx < cw + 4 || (h * sy < chipH + 4 && rows > 1)) continue;
        const cx = R.x + (x + w / 2) * sx, cy = R.y + y * sy + 3;
        el("rect", { x: cx - cw / 2, y: cy, width: cw, height: chipH, rx: 3, fill: b.color, opacity: 0.9, class: "dv-chip", "data-group": b.group }, g);
        text(g, cx, cy + 11, b.label, { "font-size": 11, "text-anchor": "middle", fill: b.text_color });
      }
      el("rect", { x: R.x, y: R.y, width: R.w, height: R.h, fill: "none", stroke: "#888", "stroke-width": 0.8 }, g);
      // ticks at the block boundaries; labels kept where they do not run into each other
      let last = -1e9;
      t.xticks.forEach((v) => {
        const x = R.x + v * sx;
        el("line", { x1: x, x2: x, y1: R.y + R.h, y2: R.y + R.h + 4, stroke: "#333" }, g);
        if (x - last >= 26) { text(g, x, R.y + R.h + 16, String(v), { "font-size": fs.tick, "text-anchor": "middle" }); last = x; }
      });
      last = -1e9;
      t.yticks.forEach((v, q) => {
        const y = R.y + v * sy;
        el("line", { x1: R.x - 4, x2: R.x, y1: y, y2: y, stroke: "#333" }, g);
        if (y - last >= 14) { text(g, R.x - 6, y + 4, t.ylabels[q], { "font-size": fs.tick, "text-anchor": "end" }); last = y; }
      });
      if (j === 0) {
        text(g, R.x + R.w / 2, R.y + R.h + 32, t.axis[0], { "font-size": fs.tick, "text-anchor": "middle", fill: "#555" });
        if (t.axis[1]) text(g, 14, R.y + R.h / 2, t.axis[1], { "font-size": fs.tick, "text-anchor": "middle", fill: "#555", transform: `rotate(-90 14 ${R.y + R.h / 2})` });
      }
      return { g, canvas, ctx, img, pixels, outlines };
    });

    // the colour bar beside the last heatmap: the table from -limit to +limit
    let bar = null;
    if (!d.stats_only) {
      const R = runs[nr - 1].rect, bx = R.x + R.w + 12, bh = Math.max(60, Math.min(R.h, 220)), by = R.y + (R.h - bh) / 2;
      const bg = el("g", { class: "dv-colorbar" }, svg), n = d.lut.length;
      d.lut.forEach((c, q) => el("rect", { x: bx, y: by + bh - ((q + 1) * bh) / n, width: 12, height: bh / n + 0.5, fill: c }, bg));
      el("rect", { x: bx, y: by, width: 12, height: bh, fill: "none", stroke: "#888", "stroke-width": 0.8 }, bg);
      const labs = [0, 0.5, 1].map((f) => text(bg, bx + 16, by + bh - f * bh + 4, "", { "font-size": fs.tick, class: "dv-bar-label" }));
      bar = { labs };
    }

    // ---- the norms: one line per block (per run: its dash), log y ----
    const ng = el("g", { class: "dv-norms" }, svg);
    el("rect", { x: NORM.x, y: NORM.y, width: NORM.w, height: NORM.h, fill: "none", stroke: "#bbb" }, ng);
    text(svg, NORM.x, NORM.y - 8, `\u2016${kind}\u2016 per block (log)`, { "font-size": fs.label, "font-weight": "bold" });
    const first = d.first_update, lastU = d.last_update;
    const nx = linear(first === lastU ? first - 1 : first, lastU, NORM.x + 4, NORM.x + NORM.w - 4);
    let ny = null;
    if (k.norm_range) {
      const [lo, hi] = k.norm_range, pad = Math.max(Math.log10(hi / lo) * 0.06, 0.05);
      ny = logScale(lo / 10 ** pad, hi * 10 ** pad, NORM.y + NORM.h, NORM.y);
      k.norm_ticks.forEach((v, q) => {
        const y = ny(v);
        el("line", { x1: NORM.x, x2: NORM.x + NORM.w, y1: y, y2: y, stroke: "#eee" }, ng);
        el("line", { x1: NORM.x - 4, x2: NORM.x, y1: y, y2: y, stroke: "#333" }, ng);
        text(ng, NORM.x - 6, y + 4, k.norm_labels[q], { "font-size": fs.tick, "text-anchor": "end" });
      });
    }
    d.update_ticks.forEach((v) => {
      const x = nx(v);
      el("line", { x1: x, x2: x, y1: NORM.y + NORM.h, y2: NORM.y + NORM.h + 4, stroke: "#333" }, ng);
      text(ng, x, NORM.y + NORM.h + 16, String(v), { "font-size": fs.tick, "text-anchor": "middle" });
    });
    text(ng, NORM.x + NORM.w, NORM.y + NORM.h + 30, "update", { "font-size": fs.tick, "text-anchor": "end", fill: "#555" });
    const stepLine = el("line", { y1: NORM.y, y2: NORM.y + NORM.h, ...lineStyle(look.roles.update_line), class: "dv-update-line" }, ng);
    const lines = [], dots = [];
    // the first run drawn last, over the others (as plot_compare): a run that follows it lies under
    [...runs].reverse().forEach((r) => {
      const dash = nr > 1 ? look.runs[r.name].dash : [];
      t.blocks.forEach((b, q) => {
        const xs = [], ys = [];
        for (let i = 0; i < mN; i++) { const v = r.norms.at(i, q); xs.push(nx(nUpdates[i])); ys.push(v > 0 && ny ? ny(v) : NaN); }
        // a gap where a norm was zero or not finite: one polyline per finite run of points
        const pl = el("g", { class: "dv-norm-line", "data-group": b.group, "data-run": r.name }, ng);
        let seg = [[], []];
        // runs side by side: each run's lines in its own look (colour and dash, as every view
        // draws the runs; hover a line or a block for the block); one run: a colour per block
        const stroke = nr > 1 ? look.runs[r.name].color : b.color;
        const flush = () => { if (seg[0].length) el("polyline", { points: points(seg[0], seg[1]), stroke, "stroke-width": 1.8, fill: "none", "stroke-dasharray": dash.length ? dash.join(" ") : null }, pl); seg = [[], []]; };
        for (let i = 0; i < mN; i++) { if (isFinite(ys[i])) { seg[0].push(xs[i]); seg[1].push(ys[i]); } else flush(); }
        flush();
        lines.push({ node: pl, r, q, xs, ys, b });
        dots.push(el("circle", { r: 3.5, fill: "white", stroke, "stroke-width": 1.8, class: "dv-norm-dot", "data-group": b.group, "data-run": r.name }, ng));
      });
    });
    if (nr > 1) names.forEach((name, j) => {
      const y = NORM.y - 12, x = NORM.x + NORM.w - (nr - j) * 130;
      el("line", { x1: x, x2: x + 26, y1: y - 4, y2: y - 4, stroke: look.runs[name].color, "stroke-width": 1.8, "stroke-dasharray": look.runs[name].dash.length ? look.runs[name].dash.join(" ") : null }, ng);
      text(ng, x + 31, y, name, { "font-size": fs.tick });
    });

    function paint(i) {
      const limit = fixed ? k.fixed_limit : updLimit ? updLimit[i] : 1;
      runs.forEach((r, j) => {
        const h = heat[j];
        if (!r.values) return;
        const [, rr, cc] = r.values.shape, px = h.pixels.data, base = i * rr * cc, n = lut.length;
        for (let q = 0; q < rr * cc; q++) {
          const v = r.values.values[base + q];
          const c = isFinite(v) ? lut[lutIndex(v, limit, n)] : bad;
          px[4 * q] = c[0]; px[4 * q + 1] = c[1]; px[4 * q + 2] = c[2]; px[4 * q + 3] = 255;
        }
        h.ctx.putImageData(h.pixels, 0, 0);
        h.img.setAttribute("href", h.canvas.toDataURL());
        h.canvas.dataset.index = i;
        h.canvas.dataset.limit = limit;
      });
      if (bar) [-limit, 0, limit].forEach((v, q) => (bar.labs[q].textContent = fmt(v)));
      const u = updates[i];
      stepLine.setAttribute("x1", nx(u)); stepLine.setAttribute("x2", nx(u));
      stepLine.dataset.update = u;
      lines.forEach((ln, q) => {
        const y = ln.ys[normAt[i]];
        dots[q].setAttribute("cx", ln.xs[normAt[i]]);
        dots[q].setAttribute("cy", isFinite(y) ? y : -99);
        dots[q].setAttribute("data-norm", ln.r.norms.at(normAt[i], ln.q));
      });
      const noun = d.kind_nouns[kind];
      // as subject_text (views/shards/findings.py) writes it: "velocity of 'w' after update 10 of 40"
      title.textContent = `${noun} of '${variable}' ${kind === "grad" ? "at" : "after"} update ${u} of ${d.last_update}`;
    }

    function highlight(group) {
      heat.forEach((h) => h.outlines.forEach((o, q) => o.querySelectorAll(".dv-outline").forEach((n) => n.setAttribute("stroke-width", q === group ? 3.5 : 1.5))));
      lines.forEach((ln) => ln.node.setAttribute("opacity", group === null || ln.q === group ? 1 : 0.25));
    }

    function hover(ev) {
      const [x, y] = toSvg(ev);
      for (const [j, r] of runs.entries()) {
        const R = r.rect;
        if (x < R.x || x >= R.x + R.w || y < R.y || y >= R.y + R.h) continue;
        const c = Math.floor(((x - R.x) / R.w) * cols), rw = Math.floor(((y - R.y) / R.h) * rows);
        const q = t.blocks.findIndex((b) => b.rects.some(([bx, by, bw, bh]) => c >= bx && c < bx + bw && rw >= by && rw < by + bh));
        if (q < 0) break;
        const b = t.blocks[q];
        let line = `${b.label}  ${b.slice}\nreplica group: ${b.short.join(", ")}\n${b.bytes_text} (${b.elements} \u00D7 ${t.dtype})`;
        if (r.values) {
          const [, rr, cc] = r.values.shape;
          const jr = Math.min(rr - 1, Math.floor(((y - R.y) / R.h) * rr)), jc = Math.min(cc - 1, Math.floor(((x - R.x) / R.w) * cc));
          const er = keepR[jr], ec = keepC[jc];
          // the element of the tensor this cell shows: its image row unravelled over the leading dims
          const lead = t.shape.slice(0, -1), idx = [];
          let rest = er;
          for (let a = lead.length - 1; a >= 0; a--) { idx.unshift(rest % lead[a]); rest = Math.floor(rest / lead[a]); }
          if (t.shape.length) idx.push(ec);
          const v = r.values.at(index, jr, jc);
          line += `\n${variable}[${idx.join(", ")}] = ${fmt(v)}`;
          svg.dataset.cell = JSON.stringify([j, jr, jc, idx]);
        }
        tip.show((nr > 1 ? r.name + "\n" : "") + line, ...local(ev));
        svg.dataset.hover = JSON.stringify([r.name, b.group]);
        highlight(q);
        return;
      }
      if (ny && x >= NORM.x && x <= NORM.x + NORM.w && y >= NORM.y && y <= NORM.y + NORM.h) {
        let best = null;
        for (const ln of lines) for (let i = 0; i < mN; i++) {
          const dd = (ln.xs[i] - x) ** 2 + (ln.ys[i] - y) ** 2;
          if (isFinite(dd) && dd < 100 && (!best || dd < best.dd)) best = { dd, ln, i };
        }
        if (best) {
          const { ln, i } = best;
          tip.show(`${nr > 1 ? ln.r.name + ", " : ""}${ln.b.label}\nupdate ${nUpdates[i]}: \u2016${kind}\u2016 = ${fmt(ln.r.norms.at(i, ln.q))}`, ...local(ev));
          svg.dataset.hover = JSON.stringify([ln.r.name, ln.b.group, nUpdates[i]]);
          highlight(ln.q);
          return;
        }
      }
      tip.hide(); delete svg.dataset.hover; delete svg.dataset.cell; highlight(null);
    }
    svg.onmousemove = hover;
    svg.onmouseleave = () => { tip.hide(); highlight(null); };
    scene = { paint, H };
  }

  function show(i) {
    index = i;
    scene.paint(i);
    slider.value = i;
    const u = updates[i];
    label.textContent = m === d.n_updates ? `update ${u} of ${d.last_update}` : `update ${u} of ${d.last_update} (values kept at ${m} of ${d.n_updates} updates)`;
  }
  function move(i) {
    show(i);
    model.set("update", updates[i]);
    model.save_changes();
  }
  function nearest(u) {
    let j = 0;
    for (let q = 0; q < m; q++) if (Math.abs(updates[q] - u) < Math.abs(updates[j] - u)) j = q;
    return j;
  }

  slider.addEventListener("input", () => move(+slider.value));
  varSel.addEventListener("change", () => { variable = varSel.value; model.set("variable", variable); model.save_changes(); build(); show(index); });
  kindSel.addEventListener("change", () => { kind = kindSel.value; model.set("kind", kind); model.save_changes(); build(); show(index); });
  fixBox.addEventListener("change", () => { fixed = fixBox.checked; show(index); });
  let timer = null;
  const stride = Math.max(1, Math.floor(m / 200));
  function stop() { clearInterval(timer); timer = null; play.textContent = "\u25B6"; play.title = "play"; }
  play.addEventListener("click", () => {
    if (timer) return stop();
    if (index >= m - 1) move(0);
    play.textContent = "\u275A\u275A"; play.title = "pause";
    timer = setInterval(() => { if (index >= m - 1) return stop(); move(Math.min(m - 1, index + stride)); }, 150);
  });
  const onUpdate = () => { const j = nearest(model.get("update")); if (j !== index) show(j); };
  const onPick = () => {
    const v = model.get("variable"), k = model.get("kind");
    if ((v !== variable && d.variables.includes(v)) || (k !== kind && d.kinds.includes(k))) {
      if (d.variables.includes(v)) variable = v;
      if (d.kinds.includes(k)) kind = k;
      varSel.value = variable; kindSel.value = kind;
      build(); show(index);
    }
  };
  model.on("change:update", onUpdate);
  model.on("change:variable", onPick);
  model.on("change:kind", onPick);
  build();
  show(index);
  return () => { stop(); model.off("change:update", onUpdate); model.off("change:variable", onPick); model.off("change:kind", onPick); };
}

export default { render };
