// The Map's point view (a Streamlit components.v2 component, no build step): every point of a map drawn with
// WebGL2 (a Canvas 2D fallback when no WebGL context can be had), panned, zoomed, hovered, searched and
// lassoed in the browser. Python sends the layout once per map (data.xy: Arrow columns x, y) and a layer per
// redraw (data.layer: a uint8 code per point; meta.palette / meta.priority per code), so switching what the
// map shows re-uploads one byte per point. Events go back as state values: pinned (a clicked point), region
// ({mode, polygon, count} in data coordinates) and query (a search). window.__atlasStats holds frame times
// (measured with a 1-pixel readback after each draw, so they include the GPU's work) for bench/bench_map.py.

const HEIGHT = 620;

function hexToRgb(h) {
  const v = parseInt(h.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

function column(table, name) {
  if (!table) return null;
  const c = table.getChild ? table.getChild(name) : null;
  return c ? c : null;
}

const DIM_ALPHA = 0.06;  // the least opacity of a point outside the highlight: dim, never gone
const VS = `#version 300 es
const float DIM_ALPHA = ${DIM_ALPHA.toFixed(3)};
in vec2 a_pos; in float a_code; in float a_hl;
uniform vec2 u_scale; uniform vec2 u_offset; uniform float u_size; uniform float u_alpha; uniform float u_anyhl;
uniform sampler2D u_pal;
out vec4 v_col; out float v_hl;
void main() {
  vec4 p = texelFetch(u_pal, ivec2(int(a_code), 0), 0);
  bool hl = a_hl > 0.5;
  gl_Position = vec4(a_pos * u_scale + u_offset, hl ? -0.99 : 0.9 - 1.8 * p.a, 1.0);
  gl_PointSize = hl ? max(u_size * 1.8, 6.0) : u_size;
  // with a search or selection highlighted, the other points turn grey but stay visible: their overlap still shows
  // where the corpus is dense (issue 43.15: at u_alpha * 0.3 a million points nearly vanished)
  bool dim = u_anyhl > 0.5 && !hl;
  float a = dim ? max(u_alpha * 0.6, DIM_ALPHA) : u_alpha;
  v_col = vec4(dim ? mix(p.rgb, vec3(0.45), 0.6) : p.rgb, hl ? 1.0 : a);
  v_hl = hl ? 1.0 : 0.0;
}`;
const FS = `#version 300 es
precision mediump float;
in vec4 v_col; in float v_hl; out vec4 o;
void main() {
  vec2 c = gl_PointCoord - 0.5;
  float d = dot(c, c);
  if (d > 0.25) discard;
  o = (v_hl > 0.5 && d > 0.13) ? vec4(0.08, 0.08, 0.08, 1.0) : v_col;  // a chosen point: its colour in a dark ring
}`;

function shader(gl, type, src) {
  const s = gl.createShader(type);
  gl.shaderSource(s, src);
  gl.compileShader(s);
  if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
  return s;
}

function init(root) {
  const box = document.createElement("div");
  box.className = "atlas";
  box.innerHTML = `
    <div class="atlas-bar">
      <span class="atlas-modes">
        <button data-mode="pan" class="on" title="drag to pan, wheel to zoom, click a point to pin it">Pan</button>
        <button data-mode="box" title="drag a box to choose the points inside">Box</button>
        <button data-mode="lasso" title="draw around the points to choose">Lasso</button>
      </span>
      <input class="atlas-search" type="search" placeholder="search sentences (Enter)" />
      <label><input class="atlas-labels" type="checkbox" checked /> labels</label>
      <button class="atlas-reset" title="show the whole map">Reset view</button>
      <span class="atlas-info"></span>
    </div>
    <div class="atlas-stage"><canvas></canvas><svg class="atlas-draw"></svg><div class="atlas-names"></div>
      <div class="atlas-legend"></div><div class="atlas-tip"></div></div>`;
  root.appendChild(box);
  const st = {
    box, canvas: box.querySelector("canvas"), svg: box.querySelector("svg"), tip: box.querySelector(".atlas-tip"),
    names: box.querySelector(".atlas-names"), legend: box.querySelector(".atlas-legend"),
    info: box.querySelector(".atlas-info"), mode: "pan", zoom: 1, panX: 0, panY: 0, n: 0, key: null,
    hl: null, hlIdx: [], anyHl: false, stats: { renderer: null, points: 0, renders: 0, frames: 0, lastFrameMs: 0, totalMs: 0,
                                     maxFrameMs: 0, layer: null },
  };
  window.__atlasStats = st.stats;
  window.__atlasHighlighted = () => st.hlIdx || [];  // tests: the points a search or selection highlights
  window.__atlasPoint = (i) => {  // page coordinates of point i (tests and benchmarks click and hover with it)
    const [px, py] = toPixel(st, st.unit[2 * i], st.unit[2 * i + 1]), r = st.canvas.getBoundingClientRect();
    return { x: r.left + px, y: r.top + py };
  };
  const gl = st.canvas.getContext("webgl2", { antialias: false, preserveDrawingBuffer: true });
  if (gl) {
    try {
      const prog = gl.createProgram();
      gl.attachShader(prog, shader(gl, gl.VERTEX_SHADER, VS));
      gl.attachShader(prog, shader(gl, gl.FRAGMENT_SHADER, FS));
      gl.linkProgram(prog);
      if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) throw new Error(gl.getProgramInfoLog(prog));
      st.gl = gl; st.prog = prog;
      st.buf = { pos: gl.createBuffer(), code: gl.createBuffer(), hl: gl.createBuffer() };
      st.pal = gl.createTexture();
      st.stats.renderer = "webgl2";
    } catch (e) {
      st.gl = null;
      console.warn("atlas: WebGL2 unusable, drawing with Canvas 2D", e);
    }
  }
  if (!st.gl) { st.ctx2d = st.canvas.getContext("2d"); st.stats.renderer = "canvas2d"; }
  bindEvents(st);
  new ResizeObserver(() => resize(st)).observe(box);
  return st;
}

function resize(st) {
  const w = Math.max(200, st.box.clientWidth), dpr = window.devicePixelRatio || 1;
  st.w = w; st.h = HEIGHT; st.dpr = dpr;
  st.canvas.width = Math.round(w * dpr); st.canvas.height = Math.round(HEIGHT * dpr);
  st.canvas.style.width = w + "px"; st.canvas.style.height = HEIGHT + "px";
  st.svg.setAttribute("width", w); st.svg.setAttribute("height", HEIGHT);
  draw(st);
}

// ---- coordinates: data (x, y) -> unit square [-1, 1] (by the map's robust bounds) -> clip space -> pixels
function unitOf(st, x, y) {
  const [x0, x1, y0, y1] = st.bounds;
  return [((x - x0) / (x1 - x0)) * 2 - 1, ((y - y0) / (y1 - y0)) * 2 - 1];
}
function scaleXY(st) {
  const aspect = st.w / st.h;
  return aspect > 1 ? [st.zoom / aspect, st.zoom] : [st.zoom, st.zoom * aspect];
}
function toPixel(st, ux, uy) {
  const [sx, sy] = scaleXY(st);
  return [((ux * sx + st.panX) + 1) / 2 * st.w, (1 - (uy * sy + st.panY)) / 2 * st.h];
}
function toUnit(st, px, py) {
  const [sx, sy] = scaleXY(st);
  return [((px / st.w) * 2 - 1 - st.panX) / sx, ((1 - (py / st.h) * 2) - st.panY) / sy];
}
function toData(st, px, py) {
  const [ux, uy] = toUnit(st, px, py), [x0, x1, y0, y1] = st.bounds;
  return [x0 + (ux + 1) / 2 * (x1 - x0), y0 + (uy + 1) / 2 * (y1 - y0)];
}

// ---- data
function setPoints(st, xy, meta) {
  const xs = column(xy, "x").toArray(), ys = column(xy, "y").toArray(), n = xs.length;
  st.xs = xs; st.ys = ys; st.n = n; st.bounds = meta.bounds; st.key = meta.key;
  const unit = new Float32Array(2 * n);
  for (let i = 0; i < n; i++) {
    const u = unitOf(st, xs[i], ys[i]);
    unit[2 * i] = u[0]; unit[2 * i + 1] = u[1];
  }
  st.unit = unit;
  buildGrid(st);
  st.zoom = 1; st.panX = 0; st.panY = 0;
  if (st.gl) {
    const gl = st.gl;
    gl.bindBuffer(gl.ARRAY_BUFFER, st.buf.pos);
    gl.bufferData(gl.ARRAY_BUFFER, unit, gl.STATIC_DRAW);
  }
  st.stats.points = n;
}

function buildGrid(st) {  // hover and click look up points in a 256 x 256 grid over the unit square
  const G = 256, n = st.n, cell = new Int32Array(n), count = new Int32Array(G * G + 1);
  for (let i = 0; i < n; i++) {
    const gx = Math.min(G - 1, Math.max(0, ((st.unit[2 * i] + 1) / 2 * G) | 0));
    const gy = Math.min(G - 1, Math.max(0, ((st.unit[2 * i + 1] + 1) / 2 * G) | 0));
    cell[i] = gy * G + gx; count[cell[i] + 1]++;
  }
  for (let c = 0; c < G * G; c++) count[c + 1] += count[c];
  const items = new Int32Array(n), fill = count.slice(0, G * G);
  for (let i = 0; i < n; i++) items[fill[cell[i]]++] = i;
  st.grid = { G, start: count, items };
}

function setLayer(st, layer, meta) {
  const codes = column(layer, "c").toArray();
  st.codes = codes; st.palette = meta.palette; st.priority = meta.priority; st.legendData = meta.legend;
  st.rgb = meta.palette.map(hexToRgb);
  if (st.gl) {
    const gl = st.gl, tex = new Uint8Array(256 * 4);
    meta.palette.forEach((h, i) => {
      const [r, g, b] = hexToRgb(h);
      tex.set([r, g, b, Math.min(255, meta.priority[i] | 0)], 4 * i);
    });
    gl.bindTexture(gl.TEXTURE_2D, st.pal);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, 256, 1, 0, gl.RGBA, gl.UNSIGNED_BYTE, tex);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    gl.bindBuffer(gl.ARRAY_BUFFER, st.buf.code);
    gl.bufferData(gl.ARRAY_BUFFER, codes, gl.DYNAMIC_DRAW);
  }
  drawLegend(st, meta);
}

function setHighlight(st, mask) {
  st.hl = mask; st.hlIdx = [];
  for (let i = 0; i < mask.length; i++) if (mask[i]) st.hlIdx.push(i);
  st.anyHl = st.hlIdx.length > 0;
  if (st.gl) {
    st.gl.bindBuffer(st.gl.ARRAY_BUFFER, st.buf.hl);
    st.gl.bufferData(st.gl.ARRAY_BUFFER, mask, st.gl.DYNAMIC_DRAW);
  }
}

// ---- drawing
function draw(st) {
  if (!st.n || !st.w) return;
  const t0 = performance.now();
  const sizeBase = Math.max(1.5, Math.min(7, 2.2 * Math.sqrt(st.zoom) * Math.sqrt(Math.max(1, 20000 / st.n))));
  const alpha = Math.max(0.08, Math.min(0.85, Math.sqrt(20000 / st.n) * 0.75 * st.zoom));
  if (st.gl) {
    const gl = st.gl, p = st.prog;
    gl.viewport(0, 0, st.canvas.width, st.canvas.height);
    gl.clearColor(1, 1, 1, 1); gl.clearDepth(1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST); gl.depthFunc(gl.LEQUAL);
    gl.enable(gl.BLEND); gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
    gl.useProgram(p);
    const attr = (name, buf, size, type) => {
      const loc = gl.getAttribLocation(p, name);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf); gl.enableVertexAttribArray(loc);
      gl.vertexAttribPointer(loc, size, type, false, 0, 0);
    };
    attr("a_pos", st.buf.pos, 2, gl.FLOAT);
    attr("a_code", st.buf.code, 1, gl.UNSIGNED_BYTE);
    attr("a_hl", st.buf.hl, 1, gl.UNSIGNED_BYTE);
    const [sx, sy] = scaleXY(st);
    gl.uniform2f(gl.getUniformLocation(p, "u_scale"), sx, sy);
    gl.uniform2f(gl.getUniformLocation(p, "u_offset"), st.panX, st.panY);
    gl.uniform1f(gl.getUniformLocation(p, "u_size"), sizeBase * st.dpr);
    gl.uniform1f(gl.getUniformLocation(p, "u_alpha"), alpha);
    gl.uniform1f(gl.getUniformLocation(p, "u_anyhl"), st.anyHl ? 1 : 0);
    gl.activeTexture(gl.TEXTURE0); gl.bindTexture(gl.TEXTURE_2D, st.pal);
    gl.uniform1i(gl.getUniformLocation(p, "u_pal"), 0);
    gl.drawArrays(gl.POINTS, 0, st.n);
    gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(4));  // wait for the GPU: honest frame times
  } else {
    draw2d(st, sizeBase, alpha);
  }
  const dt = performance.now() - t0, s = st.stats;
  s.frames++; s.lastFrameMs = dt; s.totalMs += dt; s.maxFrameMs = Math.max(s.maxFrameMs, dt);
  s.meanFrameMs = s.totalMs / s.frames;
  drawNames(st);
}

function draw2d(st, size, alpha) {  // no WebGL: pixels written into an ImageData, highest priority wins a pixel
  const w = st.canvas.width, h = st.canvas.height, img = st.ctx2d.createImageData(w, h), px = img.data;
  const prio = new Int16Array(w * h).fill(-1), r = Math.max(1, Math.round(size * st.dpr / 2));
  px.fill(255);
  for (let i = 0; i < st.n; i++) {
    const code = st.codes[i], hl = st.hl && st.hl[i], pr = hl ? 300 : st.priority[code];
    const [cx, cy] = toPixel(st, st.unit[2 * i], st.unit[2 * i + 1]);
    const x = Math.round(cx * st.dpr), y = Math.round(cy * st.dpr);
    if (x < 0 || y < 0 || x >= w || y >= h) continue;
    const dim = st.anyHl && !hl, a = hl ? 1 : (dim ? Math.max(alpha * 0.6, DIM_ALPHA) : alpha);
    const c = dim ? st.rgb[code].map((v) => v * 0.4 + 115 * 0.6) : st.rgb[code];
    for (let dy = -r; dy <= r; dy++) for (let dx = -r; dx <= r; dx++) {
      const xx = x + dx, yy = y + dy;
      if (xx < 0 || yy < 0 || xx >= w || yy >= h || prio[yy * w + xx] > pr) continue;
      const o = 4 * (yy * w + xx);
      px[o] += (c[0] - px[o]) * a; px[o + 1] += (c[1] - px[o + 1]) * a; px[o + 2] += (c[2] - px[o + 2]) * a;
      prio[yy * w + xx] = pr;
    }
  }
  st.ctx2d.putImageData(img, 0, 0);
}

const LABEL_CLEAR_MAX = 20000;  // more highlighted points than this: the cluster names step aside altogether

function drawNames(st) {
  st.names.replaceChildren();
  st.stats.labelsHidden = 0;
  if (!st.showNames || !st.clusters) return;
  if (st.anyHl && st.hlIdx.length > LABEL_CLEAR_MAX) { st.stats.labelsHidden = st.clusters.length; return; }
  // a name never covers a highlighted point (issue 43.15): a label whose box holds one is left out while it does
  const hlPix = st.anyHl ? st.hlIdx.map((i) => toPixel(st, st.unit[2 * i], st.unit[2 * i + 1])) : [];
  for (const c of st.clusters) {
    const [ux, uy] = unitOf(st, c.x, c.y), [px, py] = toPixel(st, ux, uy);
    if (px < 0 || py < 0 || px > st.w || py > st.h) continue;
    const el = document.createElement("span");
    el.textContent = c.label; el.style.left = px + "px"; el.style.top = py + "px";
    el.title = `${c.size.toLocaleString()} sentences`;
    st.names.appendChild(el);
    if (hlPix.length) {
      const box = el.getBoundingClientRect(), stage = st.names.getBoundingClientRect(), pad = 8;  // a highlighted point's radius
      const x0 = box.left - stage.left - pad, x1 = box.right - stage.left + pad;
      const y0 = box.top - stage.top - pad, y1 = box.bottom - stage.top + pad;
      if (hlPix.some(([hx, hy]) => hx >= x0 && hx <= x1 && hy >= y0 && hy <= y1)) {
        el.remove();
        st.stats.labelsHidden++;
      }
    }
  }
}

// Every string that reaches the page here comes from a corpus, a field, a selection or a user: the DOM is built with
// createElement/textContent (never innerHTML), so such text is shown as text and cannot run as script.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "style") Object.assign(node.style, v); else node.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== "") node.append(c instanceof Node ? c : String(c));
  return node;
}

function svgShape(tag, attrs) {  // SVG needs its namespace: an HTML-namespace <polyline> is never drawn
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

function drawLegend(st, meta) {
  const rows = (meta.legend || []).map((e) => {
    if (e.min !== undefined) {
      return el("div", { class: "scale" }, el("b", {}, e.label),
        el("span", { class: "bar", style: { background: `linear-gradient(90deg,${(e.colors || []).join(",")})` } }),
        el("small", {}, `${Number(e.min).toPrecision(3)} … ${Number(e.max).toPrecision(3)}`));
    }
    if (!e.count) return null;
    return el("div", {}, el("i", { style: { background: String(e.color) } }), `${e.label} `,
      el("small", {}, Number(e.count).toLocaleString()));
  });
  st.legend.replaceChildren(el("div", { class: "title" }, meta.layer_name || ""), ...rows.filter(Boolean));
}

// ---- hover, click, pan, zoom, box, lasso, search
function nearest(st, px, py, radiusPx = 8) {
  if (!st.grid) return -1;
  const [ux, uy] = toUnit(st, px, py), { G, start, items } = st.grid;
  const [sx] = scaleXY(st), ru = radiusPx / (st.w / 2) / sx;
  const gx0 = Math.max(0, Math.floor((ux - ru + 1) / 2 * G)), gx1 = Math.min(G - 1, Math.floor((ux + ru + 1) / 2 * G));
  const gy0 = Math.max(0, Math.floor((uy - ru + 1) / 2 * G)), gy1 = Math.min(G - 1, Math.floor((uy + ru + 1) / 2 * G));
  let best = -1, bestD = Infinity, seen = 0;
  for (let gy = gy0; gy <= gy1; gy++) for (let gx = gx0; gx <= gx1; gx++) {
    const c = gy * G + gx;
    for (let k = start[c]; k < start[c + 1]; k++) {
      const i = items[k], [qx, qy] = toPixel(st, st.unit[2 * i], st.unit[2 * i + 1]);
      const d = (qx - px) ** 2 + (qy - py) ** 2;
      if (d < bestD && d <= radiusPx * radiusPx) { bestD = d; best = i; }
      if (++seen > 200000) return best;  // zoomed far out over a dense map: the first close point will do
    }
  }
  return best;
}

function describe(st, i) {  // the hover card, as DOM nodes (see el)
  let corpus = "", row = i;
  for (const c of st.corpora || []) if (i >= c.offset && i < c.offset + c.sentences) { corpus = c.name; row = i - c.offset; }
  const text = st.texts ? st.texts.get(i) : null, entry = (st.legendData || [])[st.codes[i]];
  const group = entry && entry.label !== undefined && entry.min === undefined ? entry.label : "";
  return [text ? String(text) : el("i", {}, "click to read this sentence"), el("br"),
    el("small", {}, `${corpus} · row ${row.toLocaleString()}${group ? " · " + group : ""}`)];
}

function pointInPolygon(poly, x, y) {  // even-odd rule: the same test as core.selection.layers.points_in_polygon
  let inside = false;
  for (let a = 0, b = poly.length - 1; a < poly.length; b = a++) {
    const [ax, ay] = poly[a], [bx, by] = poly[b];
    if ((ay > y) !== (by > y) && x < (bx - ax) * (y - ay) / (by - ay) + ax) inside = !inside;
  }
  return inside;
}

function finishRegion(st, pixels) {
  st.svg.replaceChildren();
  if (pixels.length < 3) return;
  const step = Math.max(1, Math.ceil(pixels.length / 200));
  const poly = pixels.filter((_, k) => k % step === 0).map(([px, py]) => toData(st, px, py));
  let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
  for (const [x, y] of poly) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
  const mask = new Uint8Array(st.n);
  let count = 0;
  for (let i = 0; i < st.n; i++) {
    const x = st.xs[i], y = st.ys[i];
    if (x < x0 || x > x1 || y < y0 || y > y1) continue;
    if (pointInPolygon(poly, x, y)) { mask[i] = 1; count++; }
  }
  setHighlight(st, mask);
  draw(st);
  st.info.textContent = `${count.toLocaleString()} points chosen`;
  st.setState("region", { mode: st.mode, polygon: poly, count, map: st.key });
}

function search(st, q) {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (st.texts && words.length) {  // the browser's own search: instant; the page lists the matches after its rerun
    const mask = new Uint8Array(st.n);
    let count = 0;
    for (let i = 0; i < st.n; i++) {
      const t = String(st.texts.get(i)).toLowerCase();
      if (words.every((w) => t.includes(w))) { mask[i] = 1; count++; }
    }
    setHighlight(st, mask);
    draw(st);
    st.info.textContent = `${count.toLocaleString()} match “${q}”`;
  }
  st.setState("query", q);
}

function bindEvents(st) {
  const c = st.canvas;
  let drag = null;
  st.box.querySelectorAll(".atlas-modes button").forEach((b) => b.addEventListener("click", () => {
    st.mode = b.dataset.mode;
    st.box.querySelectorAll(".atlas-modes button").forEach((o) => o.classList.toggle("on", o === b));
    c.style.cursor = st.mode === "pan" ? "grab" : "crosshair";
  }));
  st.box.querySelector(".atlas-reset").addEventListener("click", () => { st.zoom = 1; st.panX = 0; st.panY = 0; draw(st); });
  st.box.querySelector(".atlas-labels").addEventListener("change", (e) => { st.showNames = e.target.checked; drawNames(st); });
  st.box.querySelector(".atlas-search").addEventListener("keydown", (e) => { if (e.key === "Enter") search(st, e.target.value.trim()); });
  const pos = (e) => { const r = c.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  c.addEventListener("wheel", (e) => {
    e.preventDefault();
    const [px, py] = pos(e), before = toUnit(st, px, py);
    st.zoom = Math.max(0.5, Math.min(2000, st.zoom * Math.exp(-e.deltaY * 0.0015)));
    const [sx, sy] = scaleXY(st);  // keep the point under the cursor in place
    st.panX = (px / st.w) * 2 - 1 - before[0] * sx; st.panY = (1 - (py / st.h) * 2) - before[1] * sy;
    draw(st);
  }, { passive: false });
  c.addEventListener("pointerdown", (e) => {
    c.setPointerCapture(e.pointerId);
    const [px, py] = pos(e);
    drag = { x: px, y: py, panX: st.panX, panY: st.panY, moved: false, path: [[px, py]] };
  });
  c.addEventListener("pointermove", (e) => {
    const [px, py] = pos(e);
    if (drag) {
      drag.moved = drag.moved || Math.hypot(px - drag.x, py - drag.y) > 3;
      if (st.mode === "pan") {
        st.panX = drag.panX + ((px - drag.x) / st.w) * 2; st.panY = drag.panY - ((py - drag.y) / st.h) * 2;
        draw(st);
      } else if (st.mode === "box") {
        const x = Math.min(px, drag.x), y = Math.min(py, drag.y);
        st.svg.replaceChildren(svgShape("rect", { x, y, width: Math.abs(px - drag.x), height: Math.abs(py - drag.y) }));
      } else {
        drag.path.push([px, py]);
        st.svg.replaceChildren(svgShape("polyline", { points: drag.path.map((p) => p.join(",")).join(" ") }));
      }
      return;
    }
    if (st.hoverPending) return;
    st.hoverPending = true;
    requestAnimationFrame(() => {
      st.hoverPending = false;
      const i = nearest(st, px, py);
      if (i < 0) { st.tip.style.display = "none"; return; }
      st.tip.replaceChildren(...describe(st, i));
      st.tip.style.display = "block";
      st.tip.style.left = Math.min(px + 14, st.w - 320) + "px"; st.tip.style.top = (py + 14) + "px";
    });
  });
  c.addEventListener("pointerleave", () => { st.tip.style.display = "none"; });
  c.addEventListener("pointerup", (e) => {
    if (!drag) return;
    const [px, py] = pos(e), d = drag;
    drag = null;
    if (st.mode === "pan" && !d.moved) {
      const i = nearest(st, px, py);
      if (i >= 0) st.setState("pinned", i);
    } else if (st.mode === "box" && d.moved) {
      finishRegion(st, [[d.x, d.y], [px, d.y], [px, py], [d.x, py]]);
    } else if (st.mode === "lasso" && d.moved) {
      finishRegion(st, d.path);
    }
  });
}

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  let st = parentElement.__atlas;
  if (!st) { st = init(parentElement); parentElement.__atlas = st; st.showNames = true; }
  st.setState = setStateValue;
  const meta = data.meta;
  if (st.key !== meta.key) setPoints(st, data.xy, meta);
  st.corpora = meta.corpora; st.clusters = meta.clusters;
  st.texts = data.text ? column(data.text, "text") : null;
  setLayer(st, data.layer, meta);
  const hl = data.hl ? column(data.hl, "h").toArray() : new Uint8Array(st.n);
  setHighlight(st, hl);
  st.stats.renders++; st.stats.layer = meta.layer_name;
  st.info.textContent = `${st.n.toLocaleString()} points · ${st.stats.renderer}` + (meta.note ? ` · ${meta.note}` : "");
  if (!st.w) resize(st); else draw(st);
}
