// LayoutExplorer: one dropdown per tensor dim, the tensor cut into the blocks the devices
// hold (coloured by block), the mesh as its grid of devices, and hover. Every layout the
// dropdowns can pick was computed by Python (dtsgd_viz.web.layout_state); this module
// only maps its numbers to pixels and switches between them.

const W = 930;
const TOP = 62; // under a title of up to two lines
const LEFT = 74; // the tensor's y ticks and label
const GAP = 70; // between the tensor's panel and the mesh

function textLines(parent, x, y, s, attrs, lineHeight) {
  const lines = String(s).split("\n");
  lines.forEach((line, i) => text(parent, x, y + i * lineHeight, line, attrs));
  return lines.length;
}

// a rough width of a label in pixels (DejaVu Sans is wide: ~0.62 em per character)
function roughWidth(s, size) {
  return Math.max(...String(s).split("\n").map((l) => l.length)) * 0.62 * size;
}

function render({ model, el: root }) {
  const d = model.get("data");
  const fs = d.font_px, rank = d.shape.length;
  const ncols = d.shape[rank - 1], nrows = rank >= 2 ? d.shape[rank - 2] : 1;
  const mesh = d.mesh, cells = arr(mesh.cells), nd = mesh.devices.length;
  let key = d.layouts[model.get("specs")] ? model.get("specs") : d.specs;

  root.innerHTML = "";
  root.classList.add("dtsgd-viz", "dtsgd-viz-layout");
  Object.assign(root.style, { position: "relative", maxWidth: W + "px", font: "13px sans-serif" });

  // ---- the dropdowns ----
  const bar = html("div", { class: "dv-controls" }, root);
  Object.assign(bar.style, { display: "flex", alignItems: "center", gap: "14px", margin: "2px 0 4px 0", flexWrap: "wrap" });
  html("span", {}, bar, `${d.name} on mesh ${d.mesh_text}:`).style.color = "#555";
  const selects = d.dim_labels.map((label, dim) => {
    const wrap = html("label", {}, bar);
    Object.assign(wrap.style, { display: "inline-flex", alignItems: "center", gap: "5px" });
    html("span", {}, wrap, label);
    const sel = html("select", { class: "dv-dim", "data-dim": dim, "aria-label": label }, wrap);
    for (const o of d.options) html("option", { value: o }, sel, o);
    return sel;
  });

  // ---- where everything goes (pixels), one size for every layout ----
  const aspect = d.panel[0] / d.panel[1];
  const side = aspect <= 1.3; // a tall or square tensor: the mesh beside it; a wide one: under it
  let PW, PH;
  if (side) {
    PH = 400; PW = PH * aspect;
    if (PW > 420) { PW = 420; PH = PW / aspect; }
  } else {
    PW = W - LEFT - 20; PH = PW / aspect;
    if (PH > 240) { PH = 240; PW = PH * aspect; }
  }
  const P = { x: LEFT, y: TOP, w: PW, h: PH };
  const [mw, mh] = mesh.size;
  const ytickW = Math.max(0, ...mesh.yticks.map(([, s]) => roughWidth(s, fs.tick))) + 8;
  let M;
  {
    const x0 = side ? P.x + P.w + GAP + ytickW : LEFT + ytickW;
    const y0 = side ? TOP + 4 : P.y + P.h + 62;
    const room = { w: W - 12 - x0, h: side ? 230 : 200 };
    const cell = Math.max(6, Math.min(38, room.w / mw, room.h / mh));
    M = { x: side ? x0 : x0 + (room.w - cell * mw) / 2, y: y0, cell, w: cell * mw, h: cell * mh };
  }
  const below = M.y + M.h + 42; // the mesh's x label, then the mesh dims' roles
  const H = Math.ceil(Math.max(P.y + P.h + 48, below + 16 * (d.mesh_names.length + 2) + 8));

  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", class: "dv-svg", role: "img" }, root);
  svg.style.display = "block";

  const title = el("g", { class: "dv-title" }, svg);
  const sx = P.w / ncols, sy = P.h / nrows;
  const px = (v) => P.x + v * sx, py = (v) => P.y + v * sy;
  const tensor = el("g", { class: "dv-tensor", "data-panel": JSON.stringify(P), "data-extent": JSON.stringify([ncols, nrows]) }, svg);
  const axes = el("g", { class: "dv-axes" }, svg);
  const meshG = el("g", { class: "dv-mesh", "data-grid": JSON.stringify(M) }, svg);
  const meshText = el("g", { class: "dv-mesh-text" }, svg);
  const overlay = el("g", { class: "dv-overlay", "pointer-events": "none" }, svg);
  const tip = tooltip(root);

  const summary = html("div", { class: "dv-summary" }, root);
  Object.assign(summary.style, { margin: "4px 0 0 0", lineHeight: "1.45" });

  // the mesh grid: devices stay put, their colours follow the layout
  const cellRects = [], cellTexts = [];
  for (let dev = 0; dev < nd; dev++) {
    const x = M.x + cells.at(dev, 0) * M.cell, y = M.y + cells.at(dev, 1) * M.cell;
    cellRects.push(el("rect", { x, y, width: M.cell, height: M.cell, fill: "#ddd", stroke: "white", "stroke-width": M.cell > 14 ? 1 : 0.5, class: "dv-device", "data-device": dev }, meshG));
    const lab = mesh.cell_labels[dev], size = Math.min(fs.tick * 0.8, M.cell * 0.36);
    cellTexts.push(lab && roughWidth(lab, size) <= M.cell - 3 && size >= 7
      ? text(meshG, x + M.cell / 2, y + M.cell / 2 + size * 0.36, lab, { "font-size": size.toFixed(1), "text-anchor": "middle", "pointer-events": "none", class: "dv-device-label" })
      : null);
  }
  for (const [t, s] of mesh.xticks) text(meshG, M.x + t * M.cell, M.y + M.h + 13, s, { "font-size": fs.tick * 0.85, "text-anchor": "middle", fill: "#333" });
  for (const [t, s] of mesh.yticks) text(meshG, M.x - 6, M.y + t * M.cell + 4, s, { "font-size": fs.tick * 0.85, "text-anchor": "end", fill: "#333" });
  text(meshG, M.x + M.w / 2, M.y + M.h + 28, mesh.xlabel, { "font-size": fs.tick, "text-anchor": "middle", fill: "#333" });

  let blockRects = [], lit = null, litDevice = null;
  const entry = () => d.layouts[key];

  function devicesOf(g) {
    const groupOf = arr(entry().group_of).values, out = [];
    for (let dev = 0; dev < nd; dev++) if (groupOf[dev] === g) out.push(dev);
    return out;
  }

  function deviceList(devs) {
    const names = devs.map((v) => mesh.devices[v]), lines = [];
    for (let i = 0; i < names.length; i += 8) lines.push(names.slice(i, i + 8).join(", "));
    return lines.join(",\n  ");
  }

  // light block g and the devices holding it (one device: ring it thicker)
  function light(g, device = null) {
    overlay.innerHTML = "";
    lit = g; litDevice = device;
    blockRects.forEach((r, i) => {
      r.classList.toggle("dv-lit", i === g);
      r.setAttribute("opacity", g === null || i === g ? 1 : 0.4);
    });
    if (g === null) return;
    const r = blockRects[g];
    el("rect", { x: r.getAttribute("x"), y: r.getAttribute("y"), width: r.getAttribute("width"), height: r.getAttribute("height"), fill: "none", stroke: "black", "stroke-width": 2.5, class: "dv-outline" }, overlay);
    for (const dev of devicesOf(g)) {
      const c = cellRects[dev];
      el("rect", { x: +c.getAttribute("x") + 1, y: +c.getAttribute("y") + 1, width: M.cell - 2, height: M.cell - 2, fill: "none", stroke: "black", "stroke-width": dev === device ? 3 : 1.5, class: "dv-device-outline", "data-device": dev }, overlay);
    }
  }

  function local(ev) {
    const b = root.getBoundingClientRect();
    return [ev.clientX - b.left, ev.clientY - b.top];
  }

  function blockTip(g) {
    const e = entry(), devs = devicesOf(g), n = e.colors.length;
    return `block ${g} (of ${n}): ${d.name}${e.slices[g]}\n` +
      `held by ${devs.length === 1 ? "" : devs.length + " devices: "}${deviceList(devs)}\n` +
      `replica group ${g}` + (devs.length > 1 ? ` (${devs.length} copies)` : " (one copy)") + "\n" +
      `${e.bytes_text} per device (${fmtBytes(arr(e.bytes).values[g])} B, ${e.local_shape.join("x")} x ${d.itemsize} B)`;
  }

  function fmtBytes(v) {
    return Math.round(v).toLocaleString("en-US");
  }

  for (let dev = 0; dev < nd; dev++) {
    const c = cellRects[dev];
    c.addEventListener("mousemove", (ev) => {
      const e = entry();
      if (e.error) { tip.show(`${mesh.devices[dev]} (${mesh.coords[dev]})`, ...local(ev)); return; }
      const g = arr(e.group_of).values[dev], others = devicesOf(g).filter((v) => v !== dev);
      tip.show(`${mesh.devices[dev]} (${mesh.coords[dev]})\nholds block ${g}: ${d.name}${e.slices[g]}, ${e.bytes_text}` +
        (others.length ? `\ncopies also on ${deviceList(others)}` : "\nthe only copy"), ...local(ev));
      if (lit !== g || litDevice !== dev) light(g, dev);
      svg.dataset.hover = JSON.stringify(["device", dev]);
    });
    c.addEventListener("mouseleave", () => { tip.hide(); light(null); delete svg.dataset.hover; });
  }

  function show(k) {
    key = k;
    const e = entry();
    selects.forEach((s, i) => (s.value = e.specs[i]));
    tensor.innerHTML = ""; axes.innerHTML = ""; title.innerHTML = ""; meshText.innerHTML = ""; overlay.innerHTML = "";
    blockRects = []; lit = null;
    tip.hide();
    const bold = { "font-size": fs.title, "font-weight": "bold" };
    if (e.error) {
      text(title, 10, 20, `${d.name} (${d.shape.join(", ")}) as [${key}]: impossible`, { ...bold, fill: "#CC3311" });
      el("rect", { x: P.x, y: P.y, width: P.w, height: P.h, fill: "#f2f2f2", stroke: "#bbb", class: "dv-impossible" }, tensor);
      text(tensor, P.x + P.w / 2, P.y + P.h / 2, "impossible", { "font-size": fs.title, "text-anchor": "middle", fill: "#CC3311" });
      textLines(title, 10, 40, "see why below", { "font-size": fs.tick, fill: "#555" }, 15);
      cellRects.forEach((c, dev) => { c.setAttribute("fill", "#ddd"); if (cellTexts[dev]) cellTexts[dev].setAttribute("fill", "black"); });
      summary.innerHTML = "";
      const err = html("div", { class: "dv-error" }, summary, "impossible: " + e.error);
      Object.assign(err.style, { color: "#CC3311", fontWeight: "bold" });
      model.set("specs", key);
      return;
    }
    textLines(title, 10, 20, e.title, bold, 18);
    // the blocks
    const rects = arr(e.rects), groupOf = arr(e.group_of).values, n = rects.shape[0];
    const thin = Math.min(sx * rects.at(0, 2), sy * rects.at(0, 3)) < 12;
    for (let g = 0; g < n; g++) {
      const x = px(rects.at(g, 0)), y = py(rects.at(g, 1)), w = rects.at(g, 2) * sx, h = rects.at(g, 3) * sy;
      const r = el("rect", { x, y, width: w, height: h, fill: e.colors[g], stroke: "white", "stroke-width": thin ? 0.75 : 1.5, class: "dv-block", "data-group": g, "data-rect": JSON.stringify([rects.at(g, 0), rects.at(g, 1), rects.at(g, 2), rects.at(g, 3)]) }, tensor);
      blockRects.push(r);
      const lab = e.labels[g], size = e.label_sizes[g];
      if (lab) {
        const lines = lab.split("\n"), tw = roughWidth(lab, size), th = lines.length * size * 1.2;
        const turned = e.label_rotations[g] === 90;
        const fits = turned ? tw <= h - 4 && th <= w - 2 : tw <= w - 4 && th <= h - 2;
        if (fits) {
          const cx = x + w / 2, cy = y + h / 2;
          const t = el("text", { x: cx, y: cy, "font-family": "DejaVu Sans, sans-serif", "font-size": size, "text-anchor": "middle", fill: e.text_colors[g], "pointer-events": "none", class: "dv-block-label", transform: turned ? `rotate(-90 ${cx} ${cy})` : null }, tensor);
          lines.forEach((line, i) => {
            const ts = el("tspan", { x: cx, dy: i === 0 ? -((lines.length - 1) * size * 1.2) / 2 + size * 0.36 : size * 1.2 }, t);
            ts.textContent = line;
          });
        }
      }
      r.addEventListener("mousemove", (ev) => {
        tip.show(blockTip(g), ...local(ev));
        if (lit !== g || litDevice !== null) light(g);
        svg.dataset.hover = JSON.stringify(["block", g]);
      });
      r.addEventListener("mouseleave", () => { tip.hide(); light(null); delete svg.dataset.hover; });
    }
    el("rect", { x: P.x, y: P.y, width: P.w, height: P.h, fill: "none", stroke: "#666", "stroke-width": 0.8, "pointer-events": "none" }, tensor);
    // the axes: ticks at the block edges, the mesh dim each tensor dim is cut over
    for (const t of e.xticks) {
      el("line", { x1: px(t), x2: px(t), y1: P.y + P.h, y2: P.y + P.h + 4, stroke: "#333" }, axes);
      text(axes, px(t), P.y + P.h + 16, String(t), { "font-size": fs.tick * 0.85, "text-anchor": "middle" });
    }
    if (rank >= 2) {
      for (const t of e.yticks) {
        el("line", { x1: P.x - 4, x2: P.x, y1: py(t), y2: py(t), stroke: "#333" }, axes);
        text(axes, P.x - 6, py(t) + 4, String(t), { "font-size": fs.tick * 0.85, "text-anchor": "end" });
      }
      const yl = text(axes, 0, 0, e.ylabel, { "font-size": fs.tick, "text-anchor": "middle", transform: `translate(${P.x - 50},${P.y + P.h / 2}) rotate(-90)` });
      yl.classList.add("dv-ylabel");
    }
    text(axes, P.x + P.w / 2, P.y + P.h + 34, e.xlabel, { "font-size": fs.tick, "text-anchor": "middle", class: "dv-xlabel" });
    // the mesh: each device in the colour of the block it holds
    cellRects.forEach((c, dev) => {
      const g = groupOf[dev];
      c.setAttribute("fill", e.colors[g]);
      c.setAttribute("data-group", g);
      if (cellTexts[dev]) cellTexts[dev].setAttribute("fill", e.text_colors[g]);
    });
    // what each mesh dim does, one per line, under the mesh
    const roles = e.roles.replace(/^mesh dims: /, "").split(" \u00b7 ");
    text(meshText, M.x - ytickW, below + 8, "mesh dims", { "font-size": fs.tick, "font-weight": "bold", fill: "#333" });
    roles.forEach((r, i) => text(meshText, M.x - ytickW, below + 8 + 16 * (i + 1), r, { "font-size": fs.tick, fill: "#333", class: "dv-role" }));
    let yNote = below + 8 + 16 * (roles.length + 1) + 4;
    if (e.ids_note) { text(meshText, M.x - ytickW, yNote, e.ids_note, { "font-size": fs.tick, fill: "#333", class: "dv-ids-note" }); yNote += 16; }
    text(meshText, M.x - ytickW, yNote, "hover a block or a device", { "font-size": fs.tick * 0.9, fill: "#777", "font-style": "italic" });
    // the texts under the picture
    summary.innerHTML = "";
    html("div", { class: "dv-summary-line" }, summary, e.summary);
    html("div", { class: "dv-memory" }, summary, e.memory);
    html("div", { class: "dv-traffic" }, summary, e.traffic);
    for (const note of d.notes) Object.assign(html("div", { class: "dv-note" }, summary, note).style, { color: "#666", fontSize: "12px" });
    model.set("specs", key);
  }

  function pick() {
    const k = selects.map((s) => s.value).join(", ");
    if (!(k in d.layouts)) return;
    show(k);
    model.save_changes();
  }
  for (const s of selects) s.addEventListener("change", pick);
  svg.addEventListener("mouseleave", () => { tip.hide(); light(null); });

  const onSpecs = () => {
    const k = model.get("specs");
    if (k !== key && k in d.layouts) show(k);
  };
  model.on("change:specs", onSpecs);
  show(key);
  return () => model.off("change:specs", onSpecs);
}

export default { render };
