// The task stream: every task run as a bar on a <canvas>, a row per worker (natural order)
// split into a lane per thread (a run takes the first lane free when it started: runs arrive
// as they finish, so a lane whose last run ended by then holds no run it overlaps), a colour
// per task group, failed runs in the error colour; the workers' transfers and spill writes
// and reads (the telemetry's `activity`, a cursor of its own) in colours of their own, in the
// lanes of the worker that did them. A bounded window of history (the
// last HISTORY runs, kept in typed arrays used as a ring), drawn group by group so that the
// fill colour changes once per group, not once per bar. Wheel: zoom around the pointer; drag:
// pan; double click: follow the newest runs again. Hover: key, worker, duration; click a
// task's run: its key in the story pane (where one is given: `openKey`).
import {
  DrawnPane, IRunColumns, ITelemetry, KeyOpener, TaskRun, axisStep, clearCanvas, clock, count, groupColour, h, isLightTheme, measureDraw,
  naturalCompare, themeVar
} from './common';

/** runs kept and drawn at most: older ones are dropped */
export const HISTORY = 100_000;
const GUTTER = 96; // px: worker names
const AXIS = 18; // px: time labels
const MAX_LANES = 64; // lanes per worker row at most
const CLICK_WAIT = 300; // ms: a click on a run opens its story unless a second one follows
/** what a run is: a task's (kind 0), or what a worker did besides (its group and status) */
const KINDS = ['task', 'transfer', 'disk-write', 'disk-read'];
/** the colour of each kind besides tasks: transfers red, spill writes orange, reads amber */
const KIND_HUE: { [group: string]: number } = { transfer: 0, 'disk-write': 28, 'disk-read': 45 };

export class TaskStreamPane extends DrawnPane {
  constructor(cluster: string, clusterName: string, private openKey: KeyOpener | null = null) {
    super('task-stream', cluster, clusterName);
    this.canvas = h('canvas', { class: 'xsched-TaskStreamCanvas', 'data-task-count': 0, 'data-worker-count': 0 }) as HTMLCanvasElement;
    this.watchSize(this.canvas);
    this._tip = h('div', { class: 'xsched-Tooltip' });
    this._tip.style.display = 'none';
    this._status = h('div', { class: 'xsched-TaskStreamStatus' });
    this.body.append(this._status, h('div', { class: 'xsched-TaskStreamBox' }, this.canvas, this._tip));
    this.canvas.addEventListener('wheel', ev => this._onWheel(ev), { passive: false });
    this.canvas.addEventListener('mousedown', ev => this._onDown(ev));
    window.addEventListener('mousemove', this._onMove);
    window.addEventListener('mouseup', this._onUp);
    this.canvas.addEventListener('mouseleave', () => (this._tip.style.display = 'none'));
    this.canvas.addEventListener('dblclick', () => {
      clearTimeout(this._clickTimer); // (a double click is no click on a run)
      this._follow = true;
      this.schedule();
    });
    // runs from elsewhere (a saved stream, a test): {detail: {records: TaskRun[]}}
    this.node.addEventListener('xsched-ingest', ev => {
      const detail = (ev as CustomEvent).detail || {};
      this.ingest(detail.records || [], detail.workers || []);
    });
    this._observer = new MutationObserver(() => this.schedule()); // theme switches
    this._observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-light', 'data-jp-theme-name'] });
  }

  readonly canvas: HTMLCanvasElement;

  dispose(): void {
    clearTimeout(this._clickTimer);
    window.removeEventListener('mousemove', this._onMove);
    window.removeEventListener('mouseup', this._onUp);
    this._observer.disconnect();
    super.dispose();
  }

  clear(): void {
    this._n = 0;
    this._head = 0;
    this._next = -1;
    this._nextActivity = -1;
    this._counts.fill(0);
    this._workerIds.clear();
    this._workerList = [];
    this._laneEnds = [];
    this._groupIds.clear();
    this._groupList = [];
    this._buckets = null;
    this._follow = true;
    this.schedule();
  }

  receive(msg: ITelemetry): void {
    const known = this._workerList.length;
    let renamed = false;
    for (const w of msg.workers || []) {
      renamed = renamed || this._names.get(w.address) !== w.name;
      this._names.set(w.address, w.name);
      this._workerId(w.address);
    }
    const changed = renamed || this._workerList.length !== known;
    let added = 0;
    const ts = msg.task_stream;
    if (ts) {
      // (runs before the cursor were held already)
      const held = this._next >= 0 && ts.first < this._next ? this._next - ts.first : 0;
      this._skipped += ts.skipped;
      this._next = ts.index;
      added += this._addColumns(ts.runs, held);
    }
    const act = msg.activity;
    if (act) {
      const held = this._nextActivity >= 0 && act.first < this._nextActivity ? this._nextActivity - act.first : 0;
      this._nextActivity = act.index;
      added += this._addColumns(act.runs, held);
    }
    this._changed(added, changed || (!!ts && ts.skipped > 0));
  }

  /** Add runs (oldest first); past HISTORY the oldest are dropped. A redraw follows when
   * anything is new (an idle cluster's polls bring nothing: nothing is drawn again). */
  ingest(records: TaskRun[], workers: { address: string; name: string }[], changed = false): void {
    for (const w of workers) {
      this._names.set(w.address, w.name);
      this._workerId(w.address);
    }
    let added = 0;
    for (const r of records) {
      added += this._add(r[0], this._groupId(r[1]), this._workerId(r[2]), r[3], r[4], r[5]);
    }
    this._changed(added, changed || workers.length > 0);
  }

  /** Add the runs of a telemetry batch from the `from`-th on: each distinct group and worker
   * is looked up once per batch, not once per run. */
  private _addColumns(runs: IRunColumns, from: number): number {
    const groups = runs.groups.map(g => this._groupId(g));
    const workers = runs.workers.map(w => this._workerId(w));
    let added = 0;
    for (let j = from; j < runs.keys.length; j++) {
      added += this._add(runs.keys[j], groups[runs.group[j]], workers[runs.worker[j]], runs.start[j], runs.stop[j],
        runs.statuses[runs.status[j]]);
    }
    return added;
  }

  /** One run into the ring (1), or none (0) when it has no time at all. */
  private _add(key: string, group: number, worker: number, begin: number | null, end: number | null,
    status: string): number {
    const start = begin ?? end;
    const stop = end ?? begin;
    if (start === null || stop === null) {
      return 0;
    }
    const i = (this._head + this._n) % HISTORY;
    if (this._n === HISTORY) {
      this._counts[this._kind[i]]--; // (the oldest run goes)
      this._head = (this._head + 1) % HISTORY;
    } else {
      this._n++;
    }
    this._key[i] = key;
    this._group[i] = group;
    this._worker[i] = worker;
    this._lane[i] = this._laneFor(worker, start, stop);
    this._start[i] = start;
    this._stop[i] = stop;
    const kind = Math.max(KINDS.indexOf(status), 0);
    this._kind[i] = kind;
    this._counts[kind]++;
    this._failed[i] = status === 'memory' || kind > 0 ? 0 : 1;
    return 1;
  }

  /** After runs came: the group order is stale when any did; redraw when anything changed. */
  private _changed(added: number, changed: boolean): void {
    if (added) {
      this._buckets = null;
    }
    if (added || changed) {
      this.schedule();
    }
  }

  protected onAfterAttach(): void {
    this.schedule();
  }

  // ------------------------------------------------------------------ drawing
  /** Draw every run held; measured as the performance entry "xsched-task-stream-draw". */
  draw(): void {
    performance.mark('xsched-task-stream-draw-start');
    const canvas = this.canvas;
    const { ctx, cssW, cssH } = clearCanvas(canvas);
    const rows = this._rows();
    const nrows = Math.max(rows.length, 1);
    canvas.setAttribute('data-task-count', String(this._counts[0]));
    canvas.setAttribute('data-transfer-count', String(this._counts[1]));
    canvas.setAttribute('data-disk-count', String(this._counts[2] + this._counts[3]));
    canvas.setAttribute('data-worker-count', String(rows.length));
    const lanes = rows.map(w => Math.max(this._laneEnds[w]?.length ?? 1, 1));
    canvas.setAttribute('data-lanes', rows.map((w, r) => `${this._label(this._workerList[w])}=${lanes[r]}`).join(','));
    const [v0, v1] = this._view();
    this._lastView = [v0, v1];
    canvas.setAttribute('data-view', `${v0},${v1}`);
    const plotW = cssW - GUTTER;
    const plotH = cssH - AXIS;
    const rowH = plotH / nrows;
    const scale = plotW / Math.max(v1 - v0, 1e-9);
    // rows: names and alternating bands
    ctx.font = `${themeVar('--jp-ui-font-size0', '11px')} ${themeVar('--jp-ui-font-family', 'sans-serif')}`;
    ctx.textBaseline = 'middle';
    for (let r = 0; r < rows.length; r++) {
      if (r % 2 === 1) {
        ctx.fillStyle = themeVar('--jp-layout-color2', '#eee');
        ctx.fillRect(GUTTER, r * rowH, plotW, rowH);
      }
      ctx.fillStyle = themeVar('--jp-ui-font-color1', '#000');
      const address = this._workerList[rows[r]];
      ctx.fillText(this._label(address), 4, r * rowH + rowH / 2, GUTTER - 8);
    }
    // a slot per (worker, lane): slotOf[worker] + lane; its top and height
    const slotOf = new Int32Array(this._workerList.length);
    const top: number[] = [];
    const height: number[] = [];
    rows.forEach((w, r) => {
      slotOf[w] = top.length;
      for (let l = 0; l < lanes[r]; l++) {
        top.push(r * rowH + (l * rowH) / lanes[r]);
        height.push(rowH / lanes[r]);
      }
    });
    // bars, group by group
    const padOf = (hgt: number) => (hgt > 6 ? Math.min(2, hgt * 0.1) : 0);
    const buckets = this._bucket();
    const light = isLightTheme();
    ctx.save();
    ctx.beginPath();
    ctx.rect(GUTTER, 0, plotW, plotH);
    ctx.clip();
    // runs of one group that touch on one row (within half a pixel) are filled as one rectangle:
    // at 100,000 runs most bars are narrower than a pixel
    const nr = top.length;
    const left = new Float64Array(nr);
    const right = new Float64Array(nr);
    const flush = (r: number) => {
      if (right[r] > left[r]) {
        const pad = padOf(height[r]);
        ctx.fillRect(left[r], top[r] + pad, right[r] - left[r], height[r] - 2 * pad);
      }
      left[r] = right[r] = -Infinity;
    };
    for (let g = 0; g < this._groupList.length; g++) {
      const from = buckets.offsets[g];
      const to = buckets.offsets[g + 1];
      if (from === to) {
        continue;
      }
      const group = this._groupList[g];
      ctx.fillStyle = group in KIND_HUE ? `hsl(${KIND_HUE[group]}, 80%, ${light ? 50 : 60}%)` : groupColour(group, light);
      left.fill(-Infinity);
      right.fill(-Infinity);
      for (let j = from; j < to; j++) {
        const i = buckets.order[j];
        if (this._failed[i]) {
          continue;
        }
        const s = this._start[i];
        const e = this._stop[i];
        if (e < v0 || s > v1) {
          continue;
        }
        const r = slotOf[this._worker[i]] + this._lane[i];
        const x0 = GUTTER + (s - v0) * scale;
        const x1 = Math.max(x0 + (e - s) * scale, x0 + 1);
        if (x0 <= right[r] + 0.5 && x1 >= left[r] - 0.5) {
          left[r] = Math.min(left[r], x0);
          right[r] = Math.max(right[r], x1);
        } else {
          flush(r);
          left[r] = x0;
          right[r] = x1;
        }
      }
      for (let r = 0; r < nr; r++) {
        flush(r);
      }
    }
    // failed runs, over the others, in the error colour
    ctx.fillStyle = themeVar('--jp-error-color1', '#d32f2f');
    for (let k = 0; k < this._n; k++) {
      const i = (this._head + k) % HISTORY;
      if (!this._failed[i] || this._stop[i] < v0 || this._start[i] > v1) {
        continue;
      }
      const x = GUTTER + (this._start[i] - v0) * scale;
      const slot = slotOf[this._worker[i]] + this._lane[i];
      ctx.fillRect(x, top[slot], Math.max((this._stop[i] - this._start[i]) * scale, 2), height[slot]);
    }
    ctx.restore();
    // the time axis: seconds since the left edge
    ctx.fillStyle = themeVar('--jp-ui-font-color2', '#666');
    ctx.fillRect(GUTTER, plotH, plotW, 1);
    const step = axisStep(v1 - v0, plotW, s => ctx.measureText(clock(v1, s)).width);
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = GUTTER + (t - v0) * scale;
      ctx.fillRect(x, plotH, 1, 4);
      const text = clock(t, step);
      if (x + 2 + ctx.measureText(text).width <= GUTTER + plotW) { // (a label cut by the edge says nothing)
        ctx.fillText(text, x + 2, plotH + AXIS / 2 + 2);
      }
    }
    this._status.textContent =
      `${count(this._counts[0])} runs on ${rows.length} workers (${nr} lanes)` +
      (this._counts[1] ? ` · ${count(this._counts[1])} transfers` : '') +
      (this._counts[2] + this._counts[3] ? ` · ${count(this._counts[2] + this._counts[3])} spill writes and reads` : '') +
      (this._skipped ? ` (${count(this._skipped)} older runs not shown)` : '') +
      (this._follow ? '' : ' · zoomed: double-click to follow the newest runs');
    measureDraw('xsched-task-stream-draw');
  }

  /** Worker ids in natural order of their names. */
  private _rows(): number[] {
    const ids = this._workerList.map((_, i) => i);
    return ids.sort((a, b) => naturalCompare(this._label(this._workerList[a]), this._label(this._workerList[b])) ||
      naturalCompare(this._workerList[a], this._workerList[b]));
  }

  private _label(address: string): string {
    return this._names.get(address) || address.replace(/^tcp:\/\//, '');
  }

  /** [first, last] second shown: every run held, or where the wheel and drag left it. */
  private _view(): [number, number] {
    if (!this._follow) {
      return this._fixed;
    }
    if (this._n === 0) {
      const now = Date.now() / 1000;
      return [now - 10, now];
    }
    let lo = Infinity;
    let hi = -Infinity;
    for (let k = 0; k < this._n; k++) {
      const i = (this._head + k) % HISTORY;
      if (this._start[i] < lo) {
        lo = this._start[i];
      }
      if (this._stop[i] > hi) {
        hi = this._stop[i];
      }
    }
    const span = Math.max(hi - lo, 1e-3);
    return [lo - span * 0.01, hi + span * 0.01];
  }

  /** The runs held, ordered by group (a counting sort), cached until runs arrive. */
  private _bucket(): { order: Int32Array; offsets: Int32Array } {
    if (this._buckets) {
      return this._buckets;
    }
    const ng = this._groupList.length;
    const offsets = new Int32Array(ng + 1);
    for (let k = 0; k < this._n; k++) {
      offsets[this._group[(this._head + k) % HISTORY] + 1]++;
    }
    for (let g = 0; g < ng; g++) {
      offsets[g + 1] += offsets[g];
    }
    const fill = offsets.slice(0, ng);
    const order = new Int32Array(this._n);
    for (let k = 0; k < this._n; k++) {
      const i = (this._head + k) % HISTORY;
      order[fill[this._group[i]]++] = i;
    }
    this._buckets = { order, offsets };
    return this._buckets;
  }

  /** The lane of a run of worker ``w`` from ``start`` to ``stop``: the first whose last run
   * ended by ``start`` (lanes grow as threads are seen to overlap; at most MAX_LANES). */
  private _laneFor(w: number, start: number, stop: number): number {
    const ends = (this._laneEnds[w] ??= []);
    let lane = ends.findIndex(end => end <= start);
    if (lane < 0) {
      if (ends.length >= MAX_LANES) {
        lane = ends.indexOf(Math.min(...ends)); // (more overlap than lanes: the least busy one)
      } else {
        lane = ends.length;
        ends.push(stop);
        return lane;
      }
    }
    ends[lane] = Math.max(ends[lane], stop);
    return lane;
  }

  private _workerId(address: string): number {
    let id = this._workerIds.get(address);
    if (id === undefined) {
      id = this._workerList.length;
      this._workerIds.set(address, id);
      this._workerList.push(address);
    }
    return id;
  }

  private _groupId(group: string): number {
    let id = this._groupIds.get(group);
    if (id === undefined) {
      id = this._groupList.length;
      this._groupIds.set(group, id);
      this._groupList.push(group);
    }
    return id;
  }

  // ------------------------------------------------------------------ zoom, pan, hover
  private _timeAt(clientX: number): number {
    const rect = this.canvas.getBoundingClientRect();
    const [v0, v1] = this._lastView;
    return v0 + ((clientX - rect.left - GUTTER) / Math.max(rect.width - GUTTER, 1)) * (v1 - v0);
  }

  private _onWheel(ev: WheelEvent): void {
    ev.preventDefault();
    const [v0, v1] = this._lastView;
    const t = this._timeAt(ev.clientX);
    const f = Math.exp(Math.max(-1, Math.min(1, ev.deltaY * 0.002)));
    this._fixed = [t - (t - v0) * f, t + (v1 - t) * f];
    this._follow = false;
    this.schedule();
  }

  private _onDown(ev: MouseEvent): void {
    if (ev.button !== 0) {
      return;
    }
    this._drag = { x: ev.clientX, view: this._lastView, moved: false };
    ev.preventDefault();
  }

  private _onMove = (ev: MouseEvent): void => {
    if (this._drag) {
      const rect = this.canvas.getBoundingClientRect();
      const [v0, v1] = this._drag.view;
      if (Math.abs(ev.clientX - this._drag.x) < 3 && !this._drag.moved) {
        return; // (not yet a drag: a click may be on its way)
      }
      this._drag.moved = true;
      const dt = ((ev.clientX - this._drag.x) / Math.max(rect.width - GUTTER, 1)) * (v1 - v0);
      this._fixed = [v0 - dt, v1 - dt];
      this._follow = false;
      this.schedule();
      return;
    }
    if (ev.target !== this.canvas) {
      return;
    }
    this._hover(ev);
  };

  private _onUp = (ev: MouseEvent): void => {
    const click = this._drag !== null && !this._drag.moved && ev.target === this.canvas;
    this._drag = null;
    if (click && this.openKey) {
      const i = this._runAt(ev);
      if (i >= 0 && this._kind[i] === 0) {
        const key = this._key[i];
        clearTimeout(this._clickTimer);
        // (opened once no second click makes it a double click, which follows the newest runs)
        this._clickTimer = window.setTimeout(() => this.openKey!(this.cluster, key), CLICK_WAIT);
      }
    }
  };

  /** The run under the pointer (its index in the ring), or -1. */
  private _runAt(ev: MouseEvent): number {
    const rect = this.canvas.getBoundingClientRect();
    const y = ev.clientY - rect.top;
    const rows = this._rows();
    const rowH = (rect.height - AXIS) / Math.max(rows.length, 1);
    const r = Math.floor(y / rowH);
    const t = this._timeAt(ev.clientX);
    const nl = r >= 0 && r < rows.length ? Math.max(this._laneEnds[rows[r]]?.length ?? 1, 1) : 1;
    const lane = Math.min(Math.floor(((y - r * rowH) / rowH) * nl), nl - 1);
    const [v0, v1] = this._lastView;
    const slack = (2 * (v1 - v0)) / Math.max(rect.width - GUTTER, 1); // 2 px either side
    let found = -1;
    if (r >= 0 && r < rows.length && ev.clientX - rect.left > GUTTER) {
      const worker = rows[r];
      for (let k = this._n - 1; k >= 0; k--) {
        const i = (this._head + k) % HISTORY;
        if (this._worker[i] === worker && this._lane[i] === lane &&
            this._start[i] - slack <= t && t <= this._stop[i] + slack) {
          found = i;
          break;
        }
      }
    }
    return found;
  }

  private _hover(ev: MouseEvent): void {
    const rect = this.canvas.getBoundingClientRect();
    const y = ev.clientY - rect.top;
    const found = this._runAt(ev);
    if (found < 0) {
      this._tip.style.display = 'none';
      return;
    }
    const ms = (this._stop[found] - this._start[found]) * 1000;
    const address = this._workerList[this._worker[found]];
    this._tip.replaceChildren(
      h('div', { class: 'xsched-TooltipKey' }, this._key[found]),
      h('div', {}, `worker: ${this._label(address)} (${address})`),
      h('div', {}, `duration: ${ms < 1000 ? ms.toFixed(1) + ' ms' : (ms / 1000).toFixed(2) + ' s'}` +
        (this._failed[found] ? ' · failed' : ''))
    );
    if (this.openKey && this._kind[found] === 0) {
      this._tip.append(h('div', { class: 'xsched-TooltipHint' }, 'click: its story'));
    }
    this._tip.style.display = '';
    this._tip.style.left = `${Math.min(ev.clientX - rect.left + 12, rect.width - 220)}px`;
    this._tip.style.top = `${y + 12}px`;
  }

  private _key: string[] = new Array(HISTORY);
  private _group = new Int32Array(HISTORY);
  private _worker = new Int32Array(HISTORY);
  private _start = new Float64Array(HISTORY);
  private _stop = new Float64Array(HISTORY);
  private _failed = new Uint8Array(HISTORY);
  private _kind = new Uint8Array(HISTORY);
  /** runs held per kind (tasks, transfers, spill writes, spill reads) */
  private _counts = new Int32Array(KINDS.length);
  private _nextActivity = -1;
  private _lane = new Uint8Array(HISTORY);
  private _laneEnds: number[][] = []; // per worker id: the end of the last run in each lane
  private _n = 0;
  private _head = 0;
  private _next = -1;
  private _skipped = 0;
  private _names = new Map<string, string>();
  private _workerIds = new Map<string, number>();
  private _workerList: string[] = [];
  private _groupIds = new Map<string, number>();
  private _groupList: string[] = [];
  private _buckets: { order: Int32Array; offsets: Int32Array } | null = null;
  private _follow = true;
  private _fixed: [number, number] = [0, 1];
  private _lastView: [number, number] = [0, 1];
  private _drag: { x: number; view: [number, number]; moved: boolean } | null = null;
  private _clickTimer = 0;
  private _tip: HTMLElement;
  private _status: HTMLElement;
  private _observer: MutationObserver;
}
