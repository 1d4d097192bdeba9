// The timeline: memory over time (the cluster's total as an area, each worker as a thin line)
// and CPU over time below it, drawn as SVG whose colours are the theme's --jp-* variables (set
// in style/index.css, so a theme switch recolours it without a redraw). A bounded history: the
// last WINDOW seconds, at most MAX_SAMPLES samples per worker and series.
//
//   memory: the telemetry `memory` part (per-worker samples [time, rss, managed, spilled] since
//           the per-worker cursors the server keeps); a sample already held is skipped
//   cpu:    each message's `workers` rows: one sample per worker per message, at the message's time
// Hover: a vertical rule and, at that time, the total and each worker's figures.
import { DrawnPane, ITelemetry, MemorySample, axisStep, bytes, clock, h, naturalCompare, sizeOf, svg } from './common';

/** seconds of history kept and drawn */
export const WINDOW = 600;
/** samples kept per worker and series at most, whatever the rate they come at */
export const MAX_SAMPLES = 2400;
/** points of the total's curve at most */
const BINS = 300;
const GUTTER = 64; // px: the value axis
const AXIS = 18; // px: the time axis
const GAP = 10; // px: between the two charts
const CHAR_W = 6.5; // px: about one character of an axis label (SVG text is not measured before it is drawn)

/** One figure over time, oldest first, trimmed from the front. */
class Series {
  t: number[] = [];
  v: number[] = [];

  push(t: number, v: number): void {
    this.t.push(t);
    this.v.push(v);
  }

  /** Drop what is older than `oldest`, and the oldest beyond MAX_SAMPLES. */
  trim(oldest: number): void {
    let k = 0;
    while (k < this.t.length && this.t[k] < oldest) {
      k++;
    }
    k = Math.max(k, this.t.length - MAX_SAMPLES);
    if (k > 0) {
      this.t.splice(0, k);
      this.v.splice(0, k);
    }
  }

  get last(): number {
    return this.t.length ? this.t[this.t.length - 1] : -Infinity;
  }

  /** The value at time `t`: the last sample at or before it (undefined before the first). */
  at(t: number): number | undefined {
    let lo = 0;
    let hi = this.t.length - 1;
    if (hi < 0 || this.t[0] > t) {
      return undefined;
    }
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.t[mid] <= t) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    return this.v[lo];
  }
}

interface IChart {
  title: string;
  series: Map<string, Series>;
  format: (v: number) => string;
  /** a level to mark (the memory limit), if any */
  limit: number;
  cls: string;
}

export class TimelinePane extends DrawnPane {
  constructor(cluster: string, clusterName: string) {
    super('timeline', cluster, clusterName);
    this.svg = svg('svg', { class: 'xsched-TimelineSvg', 'data-worker-count': 0, 'data-samples': 0, role: 'img' }) as SVGSVGElement;
    this.svg.setAttribute('aria-label', 'memory and CPU over time');
    this._status = h('div', { class: 'xsched-TimelineStatus' });
    this._tip = h('div', { class: 'xsched-Tooltip' });
    this._tip.style.display = 'none';
    this._box = h('div', { class: 'xsched-TimelineBox' });
    this._box.append(this.svg, this._tip);
    this.body.append(this._status, this._box);
    this.svg.addEventListener('mousemove', ev => this._hover(ev));
    this.svg.addEventListener('mouseleave', () => {
      this._hoverX = null;
      this._tip.style.display = 'none';
      this.schedule();
    });
    this.watchSize(this._box);
  }

  readonly svg: SVGSVGElement;

  clear(): void {
    this._memory.clear();
    this._cpu.clear();
    this._names.clear();
    this._limits.clear();
    this.schedule();
  }

  receive(msg: ITelemetry): void {
    if (msg.workers) {
      const present = new Set<string>();
      const t = msg.time ?? Date.now() / 1000;
      for (const w of msg.workers) {
        present.add(w.address);
        this._names.set(w.address, w.name);
        this._limits.set(w.address, w.memory_limit || 0);
        let cpu = this._cpu.get(w.address);
        if (!cpu) {
          cpu = new Series();
          this._cpu.set(w.address, cpu);
        }
        if (t > cpu.last) {
          cpu.push(t, Number(w.cpu) || 0);
        }
      }
      for (const map of [this._memory, this._cpu, this._names, this._limits] as Map<string, unknown>[]) {
        for (const address of [...map.keys()]) {
          if (!present.has(address)) {
            map.delete(address); // the worker left
          }
        }
      }
    }
    for (const [address, samples] of Object.entries(msg.memory || {})) {
      if (msg.workers && !this._names.has(address)) {
        continue;
      }
      let series = this._memory.get(address);
      if (!series) {
        series = new Series();
        this._memory.set(address, series);
      }
      for (const s of samples as MemorySample[]) {
        if (s[0] > series.last) { // (a sample sent again after a reset is held already)
          series.push(s[0], s[1]);
        }
      }
    }
    const newest = this._newest();
    for (const map of [this._memory, this._cpu]) {
      for (const series of map.values()) {
        series.trim(newest - WINDOW);
      }
    }
    this.schedule();
  }

  private _newest(): number {
    let newest = -Infinity;
    for (const map of [this._memory, this._cpu]) {
      for (const series of map.values()) {
        newest = Math.max(newest, series.last);
      }
    }
    return newest;
  }

  /** [first, last] second shown: the last WINDOW seconds held. */
  private _view(): [number, number] {
    const newest = this._newest();
    if (!isFinite(newest)) {
      const now = Date.now() / 1000;
      return [now - 60, now];
    }
    let oldest = Infinity;
    for (const map of [this._memory, this._cpu]) {
      for (const series of map.values()) {
        if (series.t.length) {
          oldest = Math.min(oldest, series.t[0]);
        }
      }
    }
    return [Math.max(oldest, newest - WINDOW), Math.max(newest, oldest + 1)];
  }

  private _workers(): string[] {
    const label = (a: string) => this._names.get(a) || a;
    const all = new Set([...this._memory.keys(), ...this._cpu.keys()]);
    return [...all].sort((a, b) => naturalCompare(label(a), label(b)) || naturalCompare(a, b));
  }

  // ------------------------------------------------------------------ drawing
  draw(): void {
    const box = sizeOf(this._box);
    const width = Math.max(box.width, 120);
    const height = Math.max(box.height, 80);
    const root = this.svg;
    root.setAttribute('viewBox', `0 0 ${width} ${height}`);
    root.setAttribute('width', String(width));
    root.setAttribute('height', String(height));
    const [v0, v1] = this._view();
    this._lastView = [v0, v1];
    const hasCpu = [...this._cpu.values()].some(s => s.t.length > 0);
    const plotW = width - GUTTER - 8;
    const total = height - AXIS;
    const memH = hasCpu ? Math.max((total - GAP) * 0.6, 20) : total;
    const cpuH = hasCpu ? Math.max(total - GAP - memH, 20) : 0;
    const limit = [...this._limits.values()].reduce((a, b) => a + b, 0);
    const charts: [IChart, number, number][] = [
      [{ title: 'memory', series: this._memory, format: bytes, limit, cls: 'memory' }, 0, memH]
    ];
    if (hasCpu) {
      charts.push([{ title: 'CPU', series: this._cpu, format: v => `${Math.round(v)}%`, limit: 0, cls: 'cpu' }, memH + GAP, cpuH]);
    }
    const children: SVGElement[] = [];
    let drawn = 0;
    let cpuDrawn = 0;
    for (const [chart, top, chartH] of charts) {
      const n = this._chart(children, chart, top, chartH, plotW, v0, v1);
      if (chart.cls === 'memory') {
        drawn = n;
      } else {
        cpuDrawn = n;
      }
    }
    // the time axis
    const scale = plotW / Math.max(v1 - v0, 1e-9);
    children.push(svg('line', { class: 'xsched-TimelineAxis', x1: GUTTER, x2: GUTTER + plotW, y1: total, y2: total }));
    const step = axisStep(v1 - v0, plotW, s => clock(v1, s).length * CHAR_W);
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = GUTTER + (t - v0) * scale;
      children.push(svg('line', { class: 'xsched-TimelineAxis', x1: x, x2: x, y1: total, y2: total + 4 }));
      if (x + 2 + clock(t, step).length * CHAR_W <= width) { // (a label cut by the right edge says nothing)
        const label = svg('text', { class: 'xsched-TimelineText', x: x + 2, y: total + AXIS - 4 });
        label.textContent = clock(t, step);
        children.push(label);
      }
    }
    if (this._hoverX !== null) {
      const x = Math.min(Math.max(this._hoverX, GUTTER), GUTTER + plotW);
      children.push(svg('line', { class: 'xsched-TimelineRule', x1: x, x2: x, y1: 0, y2: total }));
    }
    root.replaceChildren(...children);
    const workers = this._workers();
    root.setAttribute('data-worker-count', String(workers.length));
    root.setAttribute('data-samples', String(drawn));
    root.setAttribute('data-cpu-samples', String(cpuDrawn));
    this._status.textContent = workers.length
      ? `${workers.length} worker${workers.length === 1 ? '' : 's'} · the last ${Math.round(Math.min(v1 - v0, WINDOW) / 60) || '<1'} min` +
        ' · the area: the cluster; the lines: each worker'
      : 'No memory samples yet: they come with the workers\u2019 heartbeats.';
  }

  /** One chart: the total as an area, each worker as a thin line; returns the samples drawn. */
  private _chart(out: SVGElement[], chart: IChart, top: number, height: number, plotW: number, v0: number, v1: number): number {
    const scale = plotW / Math.max(v1 - v0, 1e-9);
    const bins = Math.max(2, Math.min(BINS, Math.floor(plotW / 2)));
    const width = (v1 - v0) / (bins - 1);
    // the total: at each bin's time, the sum of each worker's last value at or before it
    const sums = new Float64Array(bins);
    const have = new Uint8Array(bins);
    let drawn = 0;
    let peak = 0;
    for (const series of chart.series.values()) {
      for (let k = 0; k < series.t.length; k++) {
        if (series.t[k] >= v0 && series.t[k] <= v1) {
          drawn++;
          peak = Math.max(peak, series.v[k]);
        }
      }
      for (let b = 0; b < bins; b++) {
        const v = series.at(v0 + b * width);
        if (v !== undefined) {
          sums[b] += v;
          have[b] = 1;
        }
      }
    }
    let maxSum = 0;
    for (let b = 0; b < bins; b++) {
      maxSum = Math.max(maxSum, sums[b]);
    }
    let ceiling = Math.max(maxSum, peak) * 1.1 || 1;
    const showLimit = chart.limit > 0 && chart.limit < ceiling * 4;
    if (showLimit) {
      ceiling = Math.max(ceiling, chart.limit * 1.05);
    }
    const y = (v: number) => top + height - (v / ceiling) * height;
    const x = (t: number) => GUTTER + (t - v0) * scale;
    // frame, gridlines and labels
    out.push(svg('rect', { class: 'xsched-TimelineFrame', x: GUTTER, y: top, width: plotW, height }));
    for (const f of height < 40 ? [0, 1] : [0, 0.5, 1]) { // (three labels need room for three lines)
      const yy = y(ceiling * f);
      out.push(svg('line', { class: 'xsched-TimelineGrid', x1: GUTTER, x2: GUTTER + plotW, y1: yy, y2: yy }));
      const label = svg('text', { class: 'xsched-TimelineText', x: GUTTER - 4, y: Math.max(yy + 4, top + 9), 'text-anchor': 'end' });
      label.textContent = chart.format(ceiling * f);
      out.push(label);
    }
    const title = svg('text', { class: 'xsched-TimelineTitle', x: GUTTER + 6, y: top + 14 });
    title.textContent = chart.title;
    out.push(title);
    // the total as an area (where any worker had a sample)
    let d = '';
    let open = false;
    let startX = 0;
    let lastX = 0;
    for (let b = 0; b < bins; b++) {
      const xx = x(v0 + b * width);
      if (!have[b]) {
        if (open) {
          d += `L${lastX.toFixed(1)},${y(0).toFixed(1)}L${startX.toFixed(1)},${y(0).toFixed(1)}Z`;
          open = false;
        }
        continue;
      }
      d += `${open ? 'L' : 'M'}${xx.toFixed(1)},${y(sums[b]).toFixed(1)}`;
      if (!open) {
        startX = xx;
        open = true;
      }
      lastX = xx;
    }
    if (open) {
      d += `L${lastX.toFixed(1)},${y(0).toFixed(1)}L${startX.toFixed(1)},${y(0).toFixed(1)}Z`;
    }
    if (d) {
      out.push(svg('path', { class: `xsched-TimelineTotal xsched-mod-${chart.cls}`, d }));
    }
    if (showLimit) {
      out.push(svg('line', { class: 'xsched-TimelineLimit', x1: GUTTER, x2: GUTTER + plotW, y1: y(chart.limit), y2: y(chart.limit) }));
    }
    // each worker as a thin line (at most a point per pixel)
    for (const [address, series] of chart.series) {
      const points: string[] = [];
      let lastPx = -Infinity;
      for (let k = 0; k < series.t.length; k++) {
        const t = series.t[k];
        if (t < v0 || t > v1) {
          continue;
        }
        const px = x(t);
        if (px - lastPx < 1 && k !== series.t.length - 1) {
          continue;
        }
        lastPx = px;
        points.push(`${px.toFixed(1)},${y(series.v[k]).toFixed(1)}`);
      }
      if (points.length) {
        const line = svg('polyline', { class: `xsched-TimelineWorker xsched-mod-${chart.cls}`, points: points.join(' '), 'data-worker-address': address });
        out.push(line);
      }
    }
    return drawn;
  }

  // ------------------------------------------------------------------ hover
  private _hover(ev: MouseEvent): void {
    const rect = this.svg.getBoundingClientRect();
    const px = ev.clientX - rect.left;
    const plotW = rect.width - GUTTER - 8;
    if (px < GUTTER || plotW <= 0) {
      this._tip.style.display = 'none';
      return;
    }
    const [v0, v1] = this._lastView;
    const t = v0 + ((px - GUTTER) / plotW) * (v1 - v0);
    this._hoverX = px;
    const rows: HTMLElement[] = [h('div', { class: 'xsched-TooltipKey' }, clock(t, 1))];
    let mem = 0;
    let cpu = 0;
    const perWorker: [string, number | undefined, number | undefined][] = [];
    for (const address of this._workers()) {
      const m = this._memory.get(address)?.at(t);
      const c = this._cpu.get(address)?.at(t);
      mem += m || 0;
      cpu += c || 0;
      perWorker.push([address, m, c]);
    }
    rows.push(h('div', {}, `cluster: ${bytes(mem)} · CPU ${Math.round(cpu)}%`));
    perWorker.sort((a, b) => (b[1] || 0) - (a[1] || 0));
    for (const [address, m, c] of perWorker.slice(0, 12)) {
      rows.push(h('div', {}, `${this._names.get(address) || address}: ` +
        `${m === undefined ? '–' : bytes(m)} · CPU ${c === undefined ? '–' : Math.round(c) + '%'}`));
    }
    if (perWorker.length > 12) {
      rows.push(h('div', {}, `and ${perWorker.length - 12} more workers`));
    }
    this._tip.replaceChildren(...rows);
    this._tip.style.display = '';
    this._tip.style.left = `${Math.min(px + 12, Math.max(rect.width - 260, 0))}px`;
    this._tip.style.top = `${Math.min(ev.clientY - rect.top + 12, Math.max(rect.height - 80, 0))}px`;
    this.schedule();
  }

  private _memory = new Map<string, Series>();
  private _cpu = new Map<string, Series>();
  private _names = new Map<string, string>();
  private _limits = new Map<string, number>();
  private _lastView: [number, number] = [0, 1];
  private _hoverX: number | null = null;
  private _box: HTMLElement;
  private _tip: HTMLElement;
  private _status: HTMLElement;
}
