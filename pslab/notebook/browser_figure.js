// pslab's browser figure: panels of rectangles and lines drawn on one <canvas>, with hover
// details and zoom. The kernel sends plain data (pslab/notebook/browser_plots.py builds it);
// colours come in that data from pslab/drawing/palette.py, so no colour is written here.
//   layout_spec: {height, font, panels: [{share, left, right, top, bottom, xlabel, ylabel, ylog,
//            yinvert, xfmt, yfmt, zoom}]}                      (changes rarely)
//   legend: [{colour, label, line, dash}] (colour null: text only) (changes with the runs shown)
//   panels: [{xlim, ylim, yticks, colours, rects: {x0, x1, y0, y1, c, widen}, lines: [{x, y,
//             colour, width, dash, label, hover}], vline, note, hover: {lines, cols, tables}}]
//                                                              (changes on every slider step)
//   key, keyed: the control values `panels` are of, and the model ids of those controls; frames
//   sent ahead (custom message {ahead: key, panels}) are kept by key and drawn the moment the
//   controls reach their values (pslab/notebook/prefetch.py)

const MIN_FONT = 10;  // px: the smallest text drawn (a row's name among many rows)
const MIN_PX = 4;  // a fetch or push narrower than this on a long run is drawn this wide

function niceStep(span, n) {
  const raw = span / Math.max(n, 1);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const m = raw / p;
  return (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10) * p;
}

function linearTicks(a, b, n) {
  if (!(b > a)) return [a];
  const s = niceStep(b - a, n), out = [];
  for (let v = Math.ceil(a / s - 1e-9) * s; v <= b + s * 1e-9; v += s)
    out.push(Math.abs(v) < s * 1e-9 ? 0 : v);
  return out;
}

function logTicks(a, b) {
  const ratio = b / a, out = [];
  const subs = ratio < 4 ? [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8] : ratio < 20 ? [1, 2, 3, 5]
    : ratio < 200 ? [1, 2, 5] : [1];
  for (let k = Math.floor(Math.log10(a)); k <= Math.ceil(Math.log10(b)); k++)
    for (const m of subs) {
      const v = m * Math.pow(10, k);
      if (v >= a * (1 - 1e-9) && v <= b * (1 + 1e-9)) out.push(v);
    }
  return out;
}

function num(v) {
  return String(Number(v.toPrecision(5)));
}

function tickText(v, kind) {
  if (kind === "pct") return `${Math.round(v * 100)}%`;
  return num(v);
}

// "{name}" is a column's value, "{name:table}" its entry in a table; a line whose value is
// missing (-1 in a hover column) is left out, so a compute block shows no shard and a busy one no reason.
function fill(template, panel, i) {
  let missing = false;
  const text = template.replace(/\{(\w+)(?::(\w+))?\}/g, (_, name, table) => {
    const col = panel.hover.cols[name] || panel.rects[name];
    let v = col ? col[i] : null;
    if (panel.hover.cols[name] && v < 0) v = null;  // -1: none (no shard, no reason)
    if (table && v !== null) v = panel.hover.tables[table][v];
    if (v === null || v === undefined) { missing = true; return ""; }
    return typeof v === "number" ? num(v) : String(v);
  });
  return missing ? null : text;
}

// columns come as {dtype, data}: raw bytes sent as a binary buffer (a DataView here)
const ARRAYS = { f8: Float64Array, f4: Float32Array, i4: Int32Array, i2: Int16Array,
                 i1: Int8Array };
function unpack(v) {
  if (Array.isArray(v)) return v.map(unpack);
  if (!v || typeof v !== "object" || v instanceof DataView) return v;
  if (v.dtype && v.data instanceof DataView) {
    const d = v.data, bytes = d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength);
    return new ARRAYS[v.dtype](bytes);
  }
  const out = {};
  for (const k of Object.keys(v)) out[k] = unpack(v[k]);
  return out;
}

// a frame sent ahead: its columns' bytes came as the message's buffers ({dtype, buffer: i})
function lower(v, buffers) {
  if (Array.isArray(v)) return v.map(x => lower(x, buffers));
  if (!v || typeof v !== "object") return v;
  if (v.dtype && typeof v.buffer === "number") {
    const b = buffers[v.buffer];
    return { dtype: v.dtype, data: b instanceof DataView ? b : new DataView(b.buffer || b) };
  }
  const out = {};
  for (const k of Object.keys(v)) out[k] = lower(v[k], buffers);
  return out;
}

const KEEP = 64;  // frames kept per view (~50 kB each)

// a control's value as pslab.notebook.prefetch.part writes it
function partOf(m) {
  const labels = m.get("_options_labels");
  return labels ? String(labels[m.get("index")]) : String(m.get("value"));
}

function render({ model, el }) {
  const root = document.createElement("div");
  root.style.cssText = "position:relative;width:100%;user-select:none";
  const canvas = document.createElement("canvas");
  canvas.style.cssText = "display:block;width:100%";
  const tip = document.createElement("div");
  tip.className = "figure-tip";  // no "pslab-" class: the fit check skips it
  tip.style.cssText = "position:absolute;display:none;pointer-events:none;z-index:10;" +
    "background:#fff;border:1px solid #444;padding:3px 6px;font:12px/1.3 sans-serif;" +
    "white-space:pre;color:#000;box-shadow:1px 1px 3px rgba(0,0,0,.3)";
  const band = document.createElement("div");
  band.style.cssText = "position:absolute;display:none;pointer-events:none;" +
    "background:rgba(46,95,168,.15);border:1px solid #2E5FA8";
  root.append(canvas, band, tip);
  el.append(root);

  let zoom = {}, geometry = [], queued = false, frame = 0, panels = [], raw = null;
  // what to draw: the kernel's panels, or a kept frame of the controls' values now
  let shown = null, shownKey = null, source = "kernel", controls = [];
  const frames = new Map();

  function draw() {
    queued = false;
    const t0 = performance.now();
    const layout = model.get("layout_spec") || {};
    const want = shown || model.get("panels");
    if (want !== raw) { raw = want; panels = unpack(raw || []); }
    const font = layout.font || 12, dpr = window.devicePixelRatio || 1;
    const width = root.clientWidth, height = layout.height || 150;
    if (!width || !layout.panels) return;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.height = `${height}px`;
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff";
    g.fillRect(0, 0, width, height);
    g.font = `${font}px sans-serif`;
    g.textBaseline = "middle";
    drawLegend(g, model.get("legend") || [], font);
    geometry = [];
    let left = 0;
    panels.forEach((p, i) => {
      const L = layout.panels[i], w = width * L.share;
      const box = { left: left + L.left, right: left + w - L.right, top: L.top,
                    bottom: height - L.bottom };
      left += w;
      geometry.push(drawPanel(g, p, L, box, zoom[i] || p.xlim, font));
    });
    frame += 1;
    canvas.dataset.ms = (performance.now() - t0).toFixed(1);  // drawing time (the bench)
    canvas.dataset.source = source;  // "ahead": a kept frame, "kernel": the kernel's answer
    canvas.dataset.key = shownKey || "";  // the control values drawn (none: not keyed)
    canvas.dataset.frame = String(frame);  // what the browser test and bench wait for
  }

  function drawLegend(g, legend, font) {
    let x = 4;
    const y = 4 + font / 2;
    for (const item of legend) {
      if (!item.colour) {  // a text only entry (e.g. "optimizer states: 0 B")
        x -= 22;
      } else if (item.line) {
        g.strokeStyle = item.colour; g.lineWidth = 2; g.setLineDash(item.dash ? [5, 3] : []);
        g.beginPath(); g.moveTo(x, y); g.lineTo(x + 18, y); g.stroke(); g.setLineDash([]);
      } else {
        g.fillStyle = item.colour; g.fillRect(x, y - 5, 16, 10);
        g.strokeStyle = "#000"; g.lineWidth = 0.6; g.strokeRect(x, y - 5, 16, 10);
      }
      g.fillStyle = "#000"; g.textAlign = "left";
      g.fillText(item.label, x + 22, y);
      x += 22 + g.measureText(item.label).width + 14;
    }
  }

  function drawPanel(g, p, L, box, xl, font) {
    const [ya, yb] = p.ylim, ty = v => (L.ylog ? Math.log10(v) : v);
    const sx = v => box.left + (v - xl[0]) / (xl[1] - xl[0]) * (box.right - box.left);
    const frac = v => (ty(v) - ty(ya)) / (ty(yb) - ty(ya));
    const sy = v => (L.yinvert ? box.top + frac(v) * (box.bottom - box.top)
                               : box.bottom - frac(v) * (box.bottom - box.top));
    g.save();
    g.beginPath(); g.rect(box.left, box.top - 1, box.right - box.left, box.bottom - box.top + 2);
    g.clip();
    const r = p.rects, n = r ? r.x0.length : 0;
    g.lineWidth = 0.6; g.strokeStyle = "#000";
    for (let i = 0; i < n; i++) {
      const a = sx(r.x0[i]);
      let b = sx(r.x1[i]);
      if (r.widen && r.widen[i] && b - a < MIN_PX) b = a + MIN_PX;
      const top = sy(r.y0[i]), bottom = sy(r.y1[i]);
      const y = Math.min(top, bottom), h = Math.abs(bottom - top);
      g.fillStyle = p.colours[r.c[i]];
      g.fillRect(a, y, b - a, h);
      if (b - a > 1.5) g.strokeRect(a, y, b - a, h);
    }
    for (const line of p.lines || []) {
      g.strokeStyle = line.colour; g.lineWidth = line.width || 2;
      g.setLineDash(line.dash ? [6, 4] : []);
      g.beginPath();
      line.x.forEach((x, k) => (k ? g.lineTo(sx(x), sy(line.y[k])) : g.moveTo(sx(x), sy(line.y[k]))));
      g.stroke();
    }
    g.setLineDash([]);
    if (p.vline !== null && p.vline !== undefined) {
      g.strokeStyle = "#4d4d4d"; g.lineWidth = 0.8; g.setLineDash([4, 3]);
      g.beginPath(); g.moveTo(sx(p.vline), box.top); g.lineTo(sx(p.vline), box.bottom); g.stroke();
      g.setLineDash([]);
    }
    g.restore();
    g.strokeStyle = "#000"; g.lineWidth = 1; g.fillStyle = "#000";
    g.beginPath(); g.moveTo(box.left, box.top); g.lineTo(box.left, box.bottom);
    g.lineTo(box.right, box.bottom); g.stroke();
    // x ticks: about one per 70 px, on the zoomed range
    g.textAlign = "center";
    const xticks = p.xticks || linearTicks(xl[0], xl[1], Math.max(2, (box.right - box.left) / 70))
      .map(v => [v, tickText(v, L.xfmt)]);
    for (const [v, text] of xticks) {
      if (v < xl[0] - 1e-9 || v > xl[1] + 1e-9) continue;
      const x = sx(v);
      g.beginPath(); g.moveTo(x, box.bottom); g.lineTo(x, box.bottom + 4); g.stroke();
      g.fillText(text, x, box.bottom + 5 + font / 2);
    }
    g.textAlign = "right";
    let yticks = p.yticks;
    if (!yticks) {
      const vs = L.ylog ? logTicks(ya, yb) : linearTicks(Math.min(ya, yb), Math.max(ya, yb), 4);
      yticks = vs.map(v => [v, tickText(v, L.yfmt)]);
    }
    // rows closer than a line of text: their names in a smaller font, down to MIN_FONT; closer
    // still, the names take turns in k columns (row i in column i mod k, a thin line to its
    // row), their short form (a shard's "S0", the hover names its tensors); where k columns do
    // not fit the margin, every k-th is named and a note under the axis says so (the plot keeps
    // its height: the controls, the numbers and the curves stay on one screen at any rows)
    const spacing = yticks.length > 1 ? Math.abs(sy(yticks[1][0]) - sy(yticks[0][0])) : font;
    const rowFont = Math.max(MIN_FONT, Math.min(font, Math.floor(spacing)));
    const k = Math.max(1, Math.ceil(rowFont / Math.max(spacing, 1) - 1e-9));
    g.font = `${rowFont}px sans-serif`;
    const names = yticks.map(([v, text]) => (k > 1 ? String(text).split(":")[0] : text));
    const column = k > 1 ? Math.max(...names.map(t => g.measureText(t).width)) + 8 : 0;
    const turns = k > 1 && p.yticks && k * column <= L.left - 6;
    const every = turns ? 1 : k;
    yticks.forEach(([v, text], i) => {
      if (i % every) return;
      const y = sy(v);
      const x = box.left - 5 - (turns ? (i % k) * column : 0);
      if (turns && i % k) {
        g.strokeStyle = "#999"; g.lineWidth = 0.6;
        g.beginPath(); g.moveTo(x + 2, y); g.lineTo(box.left - 2, y); g.stroke();
      }
      g.fillText(turns ? names[i] : text, x, y);
    });
    if (p.yticks) canvas.dataset.columns = String(turns ? k : 1);
    g.font = `${font}px sans-serif`;
    g.textAlign = "center";
    const notes = [p.note, every > 1 && p.yticks ? `1 row in ${every} named: a hover names each`
                                                 : ""].filter(Boolean);
    // the axis name centred, or at the right where a note takes the left (zoomed: the hint)
    if (L.xlabel && !(notes.length && L.zoom && zoomed(p, xl))) {
      if (notes.length) g.textAlign = "right";
      g.fillText(L.xlabel, notes.length ? box.right : (box.left + box.right) / 2,
                 box.bottom + 8 + font * 1.5);
    }
    if (p.yticks) {  // what the tests read: every row named, or the note that says which
      canvas.dataset.every = String(every);
      canvas.dataset.note = notes.join("; ");
      canvas.dataset.rows = String(yticks.length);  // which frame: how many rows it drew
    }
    if (L.ylabel) {
      const x = box.left - L.left + font * 0.8;  // the panel's own left edge
      g.save(); g.translate(x, (box.top + box.bottom) / 2); g.rotate(-Math.PI / 2);
      g.textAlign = "center"; g.fillText(L.ylabel, 0, 0); g.restore();
    }
    if (L.zoom && zoomed(p, xl)) {
      // under the axis at the right, clear of the blocks and of the centred axis name
      g.textAlign = "right"; g.fillStyle = "#2E5FA8";
      g.fillText("zoomed (double-click: all)", box.right, box.bottom + 8 + font * 1.5);
    }
    if (notes.length) {  // rows left out or unnamed: said under the axis at the left
      g.textAlign = "left"; g.fillStyle = "#000";
      g.fillText(notes.join("; "), box.left - L.left + 4, box.bottom + 8 + font * 1.5);
    }
    const inverse = px => xl[0] + (px - box.left) / (box.right - box.left) * (xl[1] - xl[0]);
    return { box, sx, sy, inverse, p, L };
  }

  function zoomed(p, xl) {
    return xl[0] !== p.xlim[0] || xl[1] !== p.xlim[1];
  }

  function schedule() {
    if (!queued) { queued = true; queueMicrotask(draw); }
  }

  function at(event) {
    const bounds = canvas.getBoundingClientRect();
    const x = event.clientX - bounds.left, y = event.clientY - bounds.top;
    const k = geometry.findIndex(gm => x >= gm.box.left && x <= gm.box.right
                                   && y >= gm.box.top - 2 && y <= gm.box.bottom + 2);
    return { x, y, k, gm: geometry[k] };
  }

  // the block under the pointer (the last drawn wins, as it is on top), else the nearest point
  function details(gm, x, y) {
    const p = gm.p, r = p.rects;
    for (let i = (r ? r.x0.length : 0) - 1; i >= 0; i--) {
      let a = gm.sx(r.x0[i]), b = gm.sx(r.x1[i]);
      if (r.widen && r.widen[i] && b - a < MIN_PX) b = a + MIN_PX;
      const top = Math.min(gm.sy(r.y0[i]), gm.sy(r.y1[i]));
      const bottom = Math.max(gm.sy(r.y0[i]), gm.sy(r.y1[i]));
      if (x >= a - 0.5 && x <= b + 0.5 && y >= top && y <= bottom)
        return (p.hover.lines || []).map(t => fill(t, p, i)).filter(t => t !== null).join("\n");
    }
    let best = null;
    for (const line of p.lines || []) {
      if (line.hover === false) continue;  // a separator between rows: nothing to tell
      line.x.forEach((vx, k) => {
        const d = Math.hypot(gm.sx(vx) - x, gm.sy(line.y[k]) - y);
        if (d < 10 && (!best || d < best.d)) best = { d, line, k };
      });
    }
    if (!best) return "";
    const { line, k } = best;
    return `${line.label}\n${gm.L.xname || "x"} ${num(line.x[k])}\n` +
           `${gm.L.yname || "y"} ${tickText(line.y[k], gm.L.yfmt === "pct" ? "pct" : "")}`;
  }

  let drag = null;
  canvas.addEventListener("mousemove", event => {
    const { x, y, gm } = at(event);
    if (drag) {
      const a = Math.min(drag.x, x), b = Math.max(drag.x, x);
      Object.assign(band.style, { display: "block", left: `${a}px`, width: `${b - a}px`,
                                  top: `${drag.gm.box.top}px`,
                                  height: `${drag.gm.box.bottom - drag.gm.box.top}px` });
      return;
    }
    const text = gm ? details(gm, x, y) : "";
    tip.textContent = text;
    tip.style.display = text ? "block" : "none";
    if (text) {
      const w = tip.offsetWidth;
      tip.style.left = `${Math.max(0, x + 12 + w > root.clientWidth ? x - w - 12 : x + 12)}px`;
      tip.style.top = `${y + 14}px`;
    }
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; tip.textContent = ""; });
  canvas.addEventListener("mousedown", event => {
    const { x, gm, k } = at(event);
    if (gm && gm.L.zoom) drag = { x, gm, k };
  });
  window.addEventListener("mouseup", event => {
    if (!drag) return;
    const { x } = at(event), d = drag;
    drag = null;
    band.style.display = "none";
    if (Math.abs(x - d.x) < 5) return;
    const a = d.gm.inverse(Math.min(x, d.x)), b = d.gm.inverse(Math.max(x, d.x));
    zoom[d.k] = [a, b];
    schedule();
  });
  canvas.addEventListener("wheel", event => {
    const { x, gm, k } = at(event);
    if (!gm || !gm.L.zoom) return;
    event.preventDefault();
    const xl = zoom[k] || gm.p.xlim, c = gm.inverse(x), f = event.deltaY < 0 ? 0.8 : 1.25;
    const span = Math.min((xl[1] - xl[0]) * f, gm.p.xlim[1] - gm.p.xlim[0]);
    let a = c - (c - xl[0]) / (xl[1] - xl[0]) * span;
    a = Math.max(gm.p.xlim[0], Math.min(a, gm.p.xlim[1] - span));
    zoom[k] = [a, a + span];
    schedule();
  }, { passive: false });
  canvas.addEventListener("dblclick", event => {
    const { k } = at(event);
    if (k >= 0) { delete zoom[k]; schedule(); }
  });

  function keep(key, value) {
    frames.delete(key);
    frames.set(key, value);
    if (frames.size > KEEP) frames.delete(frames.keys().next().value);
  }

  function currentKey() {
    return controls.length ? controls.map(partOf).join("|") : null;
  }

  function show(value, key, from) {
    shown = value; shownKey = key; source = from;
    schedule();
  }

  // the kernel's answer: kept by its key; drawn unless the controls have moved on to values
  // whose frame is here already
  function received() {
    canvas.dataset.changed = (performance.timeOrigin + performance.now()).toFixed(1);
    const value = model.get("panels"), key = model.get("key") || null;
    if (key) keep(key, value);
    const now = currentKey();
    if (key && now !== null && now !== key && frames.has(now)) {
      if (shownKey !== now) show(frames.get(now), now, "ahead");
      return;
    }
    show(value, key, "kernel");
  }

  // a control moved in the page: draw its values' frame now, if it is here
  function moved() {
    const now = currentKey();
    if (now !== null && now !== shownKey && frames.has(now)) show(frames.get(now), now, "ahead");
  }

  model.on("msg:custom", (msg, buffers) => {
    if (msg && msg.forget) { frames.clear(); return; }
    if (!msg || msg.ahead === undefined) return;
    keep(msg.ahead, lower(msg.panels, buffers || []));
    moved();
  });
  if (typeof model.send === "function") model.send({ hello: true });  // it keeps nothing yet
  const ids = model.get("keyed") || [];
  if (ids.length && model.widget_manager)
    Promise.all(ids.map(id => model.widget_manager.get_model(id))).then(models => {
      controls = models;
      for (const m of models) m.on("change", moved);
    }, () => { controls = []; });
  // older values than the controls: pale until they are of them (an anywidget view keeps only
  // the classes it started with, so the kernel says it in a trait: BrowserFigure.faded)
  const fade = () => { el.style.opacity = model.get("faded") ? "0.45" : ""; };
  model.on("change:faded", fade);
  fade();
  model.on("change:panels", received);
  model.on("change:key", received);
  model.on("change:legend", schedule);
  model.on("change:layout_spec", schedule);
  const watcher = new ResizeObserver(schedule);
  watcher.observe(root);
  schedule();
  return () => {
    watcher.disconnect();
    for (const m of controls) m.off("change", moved);
  };
}

export default { render };
