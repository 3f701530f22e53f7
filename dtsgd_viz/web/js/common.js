// Shared by every dtsgd_viz explorer module: arrays from the widget state, SVG
// elements, scales that keep a box's aspect, markers from the style table, a tooltip.
// Nothing here computes what Python measured; it only maps numbers to pixels.

const SVG_NS = "http://www.w3.org/2000/svg";

function bytesOf(data) {
  // a DataView (a live widget), an ArrayBuffer, or a base64 string (a saved page)
  if (typeof data === "string") {
    const bin = atob(data);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  if (data instanceof ArrayBuffer) return data;
  if (ArrayBuffer.isView(data)) return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
  throw new Error("dtsgd_viz: an array's data must be bytes, got " + typeof data);
}

// {dtype, shape, data} -> {values: TypedArray, shape}; at(i, j) reads row-major
function arr(entry) {
  const kinds = { float64: Float64Array, float32: Float32Array, int32: Int32Array };
  const T = kinds[entry.dtype];
  if (!T) throw new Error("dtsgd_viz: unknown dtype " + entry.dtype);
  const values = new T(bytesOf(entry.data));
  const shape = entry.shape;
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return {
    values,
    shape,
    at: (...idx) => values[idx.reduce((s, k, i) => s + k * strides[i], 0)],
    row: (i) => Array.from(values.subarray(i * strides[0], (i + 1) * strides[0])),
  };
}

function el(tag, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function html(tag, attrs = {}, parent = null, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

// data box [[x0, x1], [y0, y1]] -> pixels in rect {x, y, w, h}, one scale for both axes
function fitBox(box, rect) {
  const [[x0, x1], [y0, y1]] = box;
  const s = Math.min(rect.w / (x1 - x0), rect.h / (y1 - y0));
  const ox = rect.x + (rect.w - s * (x1 - x0)) / 2;
  const oy = rect.y + (rect.h - s * (y1 - y0)) / 2;
  return {
    scale: s,
    x: (v) => ox + (v - x0) * s,
    y: (v) => oy + (y1 - v) * s,
    inner: { x: ox, y: oy, w: s * (x1 - x0), h: s * (y1 - y0) },
  };
}

function linear(d0, d1, r0, r1) {
  return (v) => r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
}

function logScale(d0, d1, r0, r1) {
  const a = Math.log10(d0), b = Math.log10(d1);
  return (v) => r0 + ((Math.log10(v) - a) / (b - a)) * (r1 - r0);
}

// a marker of the style table ("circle", "square", "triangle", ...) centred at 0, 0
function markerPath(name, size) {
  const r = size;
  switch (name) {
    case "square": return `M${-r},${-r}H${r}V${r}H${-r}Z`;
    case "triangle": return `M0,${-1.2 * r}L${1.1 * r},${0.8 * r}H${-1.1 * r}Z`;
    case "triangle-down": return `M0,${1.2 * r}L${1.1 * r},${-0.8 * r}H${-1.1 * r}Z`;
    case "diamond": return `M0,${-1.3 * r}L${r},0L0,${1.3 * r}L${-r},0Z`;
    case "star": {
      let d = "";
      for (let i = 0; i < 10; i++) {
        const a = -Math.PI / 2 + (i * Math.PI) / 5, rr = i % 2 ? 0.45 * r : r;
        d += (i ? "L" : "M") + (rr * Math.cos(a)).toFixed(2) + "," + (rr * Math.sin(a)).toFixed(2);
      }
      return d + "Z";
    }
    default: return `M${r},0A${r},${r} 0 1 1 ${-r},0A${r},${r} 0 1 1 ${r},0Z`;
  }
}

function lineStyle(look, color) {
  return {
    stroke: color || look.color,
    "stroke-width": look.width,
    "stroke-dasharray": look.dash && look.dash.length ? look.dash.join(" ") : null,
    fill: "none",
    "stroke-linejoin": "round",
    "stroke-linecap": "butt",
  };
}

function points(xs, ys) {
  let s = "";
  for (let i = 0; i < xs.length; i++) if (isFinite(xs[i]) && isFinite(ys[i])) s += xs[i].toFixed(2) + "," + ys[i].toFixed(2) + " ";
  return s;
}

// 3 significant digits, as the notebook's printed losses read
function fmt(v) {
  if (!isFinite(v)) return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e-3 && a < 1e4 ? String(Number(v.toPrecision(3))) : v.toExponential(2).replace("e-", "e\u2212");
}

function tooltip(root) {
  const tip = html("div", { class: "dv-tip" }, root);
  Object.assign(tip.style, {
    position: "absolute", pointerEvents: "none", display: "none", background: "rgba(255,255,255,0.95)",
    border: "1px solid #999", borderRadius: "3px", padding: "3px 6px", font: "12px sans-serif",
    whiteSpace: "pre", zIndex: 10,
  });
  return {
    node: tip,
    show(text, x, y) {
      tip.textContent = text;
      tip.style.display = "block";
      // beside the pointer, flipped to its left (or above it) where it would leave the explorer
      const w = tip.offsetWidth, h = tip.offsetHeight, W = root.clientWidth, H = root.clientHeight;
      tip.style.left = (x + 14 + w > W && x - 14 - w >= 0 ? x - 14 - w : x + 14) + "px";
      tip.style.top = (y + 10 + h > H && y - 10 - h >= 0 ? y - 10 - h : y + 10) + "px";
    },
    hide() { tip.style.display = "none"; },
  };
}

function text(parent, x, y, s, attrs = {}) {
  const t = el("text", { x, y, "font-family": "DejaVu Sans, sans-serif", "font-size": 12, ...attrs }, parent);
  t.textContent = s;
  return t;
}
