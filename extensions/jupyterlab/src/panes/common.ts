// What every main-area pane shares: the telemetry messages it reads, a base widget that knows
// its cluster and says when the cluster went away, natural order, a stable group palette.
import { Widget } from '@lumino/widgets';

import { IWorkerRow } from '../api';

/** A worker row of a telemetry message (xsched/scheduler/extensions/telemetry.py): the
 * sidebar's row and what the panes show besides. */
export interface ITelemetryWorker extends IWorkerRow {
  cpu: number;
  executing: number;
  status: string;
}

/** A task group's counts. */
export interface ITelemetryGroup {
  name: string;
  done: number;
  processing: number;
  erred: number;
  waiting: number;
  total: number;
}

/** [key, group, worker, start, stop, status] */
export type TaskRun = [string, string, string, number | null, number | null, string];

/** Runs as the telemetry sends them (`columns` in xsched/scheduler/extensions/telemetry.py):
 * a list per field; a run's group, worker and status index the distinct names sent once. */
export interface IRunColumns {
  keys: string[];
  groups: string[];
  group: number[];
  workers: string[];
  worker: number[];
  start: (number | null)[];
  stop: (number | null)[];
  statuses: string[];
  status: number[];
}

/** A batch of runs since a cursor: `index` is the next cursor, `first` the number of the first run. */
export interface IRunBatch {
  runs: IRunColumns;
  index: number;
  first: number;
  skipped: number;
}

/** A worker's memory sample: [time (its clock), rss, managed, spilled] */
export type MemorySample = [number, number, number, number];

/** A log record: [number (the cursor), level, message] */
export type LogRecord = [number, string, string];

/** A frame of the profile's call tree, in preorder: [depth, function (the task prefix at
 * depth 0), file, samples through it, samples ending in it] (xsched/profiling.py) */
export type ProfileRow = [number, string, string, number, number];

/** {"type": "telemetry"}: what is new since the last one, for one cluster. */
export interface ITelemetry {
  type: 'telemetry';
  cluster: string;
  gone?: boolean;
  error?: string;
  time?: number;
  task_stream?: IRunBatch;
  /** the workers' transfers and spill writes and reads, as runs whose group and status are
   * their kind ('transfer', 'disk-write', 'disk-read'), with a cursor of their own */
  activity?: IRunBatch;
  workers?: ITelemetryWorker[];
  groups?: ITelemetryGroup[];
  /** [from, to]: the groups whose tasks feed the tasks of another group (with `groups`) */
  group_edges?: [string, string][];
  /** worker address -> its samples since the last message */
  memory?: { [address: string]: MemorySample[] };
  memory_since?: { [address: string]: number | null };
  /** "scheduler" or a worker address -> its records since the last message */
  logs?: { [source: string]: LogRecord[] };
  logs_since?: { [source: string]: number };
  /** the sampled call tree since `since` (seconds since the epoch) */
  profile?: { samples: number; since: number | null; rows: ProfileRow[] };
  /** worker address -> its last answer (seconds since the epoch) and the frames of each task running there */
  stacks?: { [worker: string]: { time: number; tasks: { [key: string]: string[] } } };
}

/** One transition of a key's story. */
export interface IStoryRow {
  /** seconds since the epoch; null before the scheduler was first watched */
  time: number | null;
  start: string;
  finish: string;
  worker: string | null;
  stimulus_id: string | null;
}

/** A key's story: its transitions, and what it does now and why it does not run (the
 * scheduler's words: SchedulerState.explain). */
export interface IStory {
  story: IStoryRow[];
  now?: string;
  /** the workers holding the key's value, when it is in memory */
  holders?: string[];
}

/** The keys of one task group, those needing attention first (the scheduler's group_keys). */
export interface IGroupKeysReply {
  group: string;
  /** the group's tasks the scheduler knows, listed or not */
  total: number;
  keys: { key: string; state: string; worker: string | null }[];
}

/** How the graph pane asks for a group's keys (the lab: the server extension; the page: its API). */
export type GroupFetcher = (cluster: string, group: string) => Promise<IGroupKeysReply>;

/** Show a key in the story pane of `cluster` (opened if need be). */
export type KeyOpener = (cluster: string, key: string) => void;

/** How a story pane asks for a key's story (the lab: the server extension; the page: its API). */
export type StoryFetcher = (cluster: string, key: string) => Promise<IStory>;

export type PaneKind =
  'task-stream' | 'progress' | 'worker-memory' | 'workers' | 'timeline' | 'logs' | 'story' | 'profile' | 'graph' | 'call-stack';

export const PANE_TITLES: { [kind in PaneKind]: string } = {
  'task-stream': 'Task Stream',
  progress: 'Progress',
  'worker-memory': 'Worker Memory',
  workers: 'Workers',
  timeline: 'Timeline',
  logs: 'Logs',
  story: 'Story',
  profile: 'Profile',
  graph: 'Graph',
  'call-stack': 'Call Stack'
};

type Attrs = { [name: string]: string | number | boolean | undefined };

/** A DOM element with attributes and children. */
export function h(tag: string, attrs: Attrs = {}, ...children: (Node | string | null)[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) {
      continue;
    }
    if (k === 'class') {
      el.className = String(v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children) {
    if (c !== null) {
      el.append(c);
    }
  }
  return el;
}

/** Set `el`'s text when it differs: writing the same text again still replaces its node,
 * which the browser lays out and shapes again. */
export function setText(el: HTMLElement | SVGElement, text: string): void {
  if (el.textContent !== text) {
    el.textContent = text;
  }
}

/** Set an attribute (a CSS property of `el.style` for names like "style.width"), when it
 * differs. */
export function setAttr(el: HTMLElement, name: string, value: string): void {
  if (name.startsWith('style.')) {
    const prop = name.slice(6);
    if (el.style.getPropertyValue(prop) !== value) {
      el.style.setProperty(prop, value);
    }
  } else if (el.getAttribute(name) !== value) {
    el.setAttribute(name, value);
  }
}

/** A pane's rows kept per key across messages: made once (``make``), then updated in place,
 * so the browser lays out and shapes only what changed. */
export class KeyedRows {
  constructor(private readonly make: (key: string) => HTMLElement) {}

  /** The row of `key`, made the first time; asked for in this message. */
  row(key: string): HTMLElement {
    this._asked.add(key);
    let row = this._rows.get(key);
    if (!row) {
      row = this.make(key);
      this._rows.set(key, row);
    }
    return row;
  }

  /** Forget the rows not asked for since the last sweep (``keepInOrder`` took them out). */
  sweep(): void {
    for (const key of this._rows.keys()) {
      if (!this._asked.has(key)) {
        this._rows.delete(key);
      }
    }
    this._asked.clear();
  }

  clear(): void {
    this._rows.clear();
    this._asked.clear();
  }

  private _rows = new Map<string, HTMLElement>();
  private _asked = new Set<string>();
}

/** Make `parent`'s children exactly `rows`, in that order, moving only those out of place:
 * a node moved (or appended again) is restyled and laid out again. */
export function keepInOrder(parent: HTMLElement, rows: HTMLElement[]): void {
  let at: ChildNode | null = parent.firstChild;
  for (const row of rows) {
    if (row === at) {
      at = at.nextSibling;
    } else {
      parent.insertBefore(row, at);
    }
  }
  while (at) {
    const next: ChildNode | null = at.nextSibling;
    at.remove();
    at = next;
  }
}

/** Compare strings with their digit runs as numbers: "worker-2" before "worker-10". */
export function naturalCompare(a: string, b: string): number {
  const pa = a.split(/(\d+)/);
  const pb = b.split(/(\d+)/);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (pa[i] === pb[i]) {
      continue;
    }
    if (i % 2 === 1) {
      const d = Number(pa[i]) - Number(pb[i]);
      if (d !== 0) {
        return d;
      }
    }
    return pa[i] < pb[i] ? -1 : 1;
  }
  return pa.length - pb.length;
}

/** Workers in natural order of their names, then addresses. */
export function byWorkerOrder(a: ITelemetryWorker, b: ITelemetryWorker): number {
  return naturalCompare(a.name, b.name) || naturalCompare(a.address, b.address);
}

/** Values read from the theme, per variable; forgotten when the theme changes and after
 * THEME_TTL ms (the theme's overrides, e.g. a font size, change without a new theme name). */
const themeCache = new Map<string, string>();
let themeCacheKey: string | null = null;
let themeCacheAt = 0;
const THEME_TTL = 2000;

/** The theme's value of a --jp-* variable (themes change live). Cached: reading a computed
 * style after another pane changed the page makes the browser recompute the page's styles
 * there and then, once per pane per frame. */
export function themeVar(name: string, fallback = ''): string {
  const key = document.body.getAttribute('data-jp-theme-name');
  const now = performance.now();
  if (key !== themeCacheKey || now - themeCacheAt > THEME_TTL) {
    themeCache.clear();
    themeCacheKey = key;
    themeCacheAt = now;
  }
  let value = themeCache.get(name);
  if (value === undefined) {
    value = getComputedStyle(document.body).getPropertyValue(name).trim();
    themeCache.set(name, value);
  }
  return value || fallback;
}

/** Elements' sizes as a ResizeObserver last reported them (``watchSize``). */
const sizes = new WeakMap<Element, { width: number; height: number }>();
const resized = new WeakMap<Element, () => void>();
let sizeObserver: ResizeObserver | null = null;

/** Keep `el`'s size for ``sizeOf`` and call `changed` when it changes. A draw then reads its
 * box without asking for a layout: reading clientWidth after another pane changed the page
 * lays the page out there and then, once per pane per frame. */
export function watchSize(el: Element, changed: () => void): void {
  if (!sizeObserver) {
    sizeObserver = new ResizeObserver(entries => {
      for (const entry of entries) {
        const { width, height } = entry.contentRect;
        const old = sizes.get(entry.target);
        sizes.set(entry.target, { width, height });
        if (!old || old.width !== width || old.height !== height) {
          resized.get(entry.target)?.();
        }
      }
    });
  }
  resized.set(el, changed);
  sizeObserver.observe(el);
}

/** Stop keeping `el`'s size (its pane is gone). */
export function unwatchSize(el: Element): void {
  sizeObserver?.unobserve(el);
  sizes.delete(el);
  resized.delete(el);
}

/** `el`'s width and height in CSS pixels: as last observed (``watchSize``), else read. */
export function sizeOf(el: HTMLElement | SVGElement): { width: number; height: number } {
  return sizes.get(el) || { width: el.clientWidth, height: el.clientHeight };
}

export function isLightTheme(): boolean {
  return document.body.getAttribute('data-jp-theme-light') !== 'false';
}

/** Size `canvas`'s pixels to its box at the screen's pixel ratio and paint it the theme's
 * background: the 2D context (in CSS pixels) and the box's width and height. */
export function clearCanvas(canvas: HTMLCanvasElement): { ctx: CanvasRenderingContext2D; cssW: number; cssH: number } {
  const ratio = window.devicePixelRatio || 1;
  const box = sizeOf(canvas);
  const cssW = Math.max(box.width, 50);
  const cssH = Math.max(box.height, 50);
  if (canvas.width !== Math.round(cssW * ratio) || canvas.height !== Math.round(cssH * ratio)) {
    canvas.width = Math.round(cssW * ratio);
    canvas.height = Math.round(cssH * ratio);
  }
  const ctx = canvas.getContext('2d', { alpha: false }) as CanvasRenderingContext2D;
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.fillStyle = themeVar('--jp-layout-color0', isLightTheme() ? '#fff' : '#111');
  ctx.fillRect(0, 0, cssW, cssH);
  return { ctx, cssW, cssH };
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes. */
export function svg(tag: string, attrs: { [name: string]: string | number } = {}): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    el.setAttribute(k, String(v));
  }
  return el;
}

/** A stable colour per task group: the hue from the name's hash, lightness from the theme. */
export function groupColour(group: string, light = isLightTheme()): string {
  let hash = 2166136261;
  for (let i = 0; i < group.length; i++) {
    hash = Math.imul(hash ^ group.charCodeAt(i), 16777619);
  }
  const hue = ((hash >>> 0) * 0.618033988749895 * 360) % 360;
  return light ? `hsl(${hue.toFixed(0)}, 62%, 48%)` : `hsl(${hue.toFixed(0)}, 58%, 62%)`;
}

/** "1.5 GiB" (a non-breaking space between number and unit). */
export function bytes(n: number): string {
  if (!n || n < 0) {
    return '0\u00a0B';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n >= 100 || i === 0 ? n.toFixed(0) : n.toFixed(1)}\u00a0${units[i]}`;
}

export function pct(part: number, whole: number): string {
  if (!whole || whole <= 0) {
    return '0%';
  }
  return `${Math.max(0, Math.min(100, (100 * part) / whole)).toFixed(2)}%`;
}

/** A stacked bar (`xsched-Bar` and `cls`): one segment per name, `xsched-Bar-<name>`, in order. */
export function stackedBar(cls: string, segments: string[]): HTMLElement {
  return h('div', { class: `xsched-Bar ${cls}`.trim() }, ...segments.map(s => h('div', { class: `xsched-Bar-${s}` })));
}

/** Each segment's width as its share of `whole`, and the bar's title, written where they changed. */
export function setBar(bar: HTMLElement, parts: { [segment: string]: number }, whole: number, title: string): void {
  for (const [segment, n] of Object.entries(parts)) {
    setAttr(bar.querySelector(`.xsched-Bar-${segment}`) as HTMLElement, 'style.width', pct(n, whole));
  }
  setAttr(bar, 'title', title);
}

/** A worker's memory bar: managed, unmanaged and spilled against its limit (without one, against
 * the most it used), the same in the sidebar and the worker memory pane. */
export const MEMORY_SEGMENTS = ['managed', 'unmanaged', 'spilled'];
export function setMemoryBar(bar: HTMLElement, w: IWorkerRow): void {
  const limit = w.memory_limit || Math.max(w.rss, w.managed + w.unmanaged + w.spilled) || 1;
  setBar(bar, { managed: w.managed, unmanaged: w.unmanaged, spilled: w.spilled }, limit,
    `managed ${bytes(w.managed)}, unmanaged ${bytes(w.unmanaged)}, spilled ${bytes(w.spilled)}, ` +
    `limit ${w.memory_limit ? bytes(w.memory_limit) : 'none'}`);
}

/** The draw since `name`-start as a performance measure (devtools and the browser tests read
 * them), keeping the page's timeline bounded: the browser keeps user timings for the page's life. */
export function measureDraw(name: string): void {
  performance.measure(name, `${name}-start`);
  performance.clearMarks(`${name}-start`);
  if (performance.getEntriesByName(name, 'measure').length >= 1000) {
    performance.clearMeasures(name);
  }
}

/** The tick step of a time axis showing `span` seconds over `plotW` pixels: the shortest
 * 1-2-5 step that leaves room for each label, `labelW(step)` pixels wide, and a gap. */
export function axisStep(span: number, plotW: number, labelW: (step: number) => number): number {
  let step = 1;
  for (let pass = 0; pass < 2; pass++) { // (a label's width depends on the step: milliseconds or not)
    const raw = span / Math.max(1, Math.floor(plotW / (labelW(step) + 16)));
    const p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-6))));
    step = [1, 2, 5, 10].map(m => m * p).find(s => s >= raw * 0.999) ?? 10 * p;
  }
  return step;
}

/** Formatters made once: toLocaleTimeString and toLocaleString make one per call, the
 * panes' largest script cost when every redraw labels its ticks. */
const TIME_OF_DAY = new Intl.DateTimeFormat([], { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
const COUNT = new Intl.NumberFormat();

/** "14:03:07" (the time of day at `t`, seconds since the epoch), with ".123" when `millis`. */
export function timeOfDay(t: number, millis = false): string {
  const base = TIME_OF_DAY.format(t * 1000);
  return millis ? `${base}.${String(Math.floor(((t * 1000) % 1000 + 1000) % 1000)).padStart(3, '0')}` : base;
}

/** "12,345" (in the browser's language). */
export function count(n: number): string {
  return COUNT.format(n);
}

/** "14:03:07", with milliseconds when the ticks are closer than a second. */
export function clock(t: number, step: number): string {
  return timeOfDay(t, step < 1);
}

/** A main-area pane of one cluster; subclasses draw telemetry into `body`. */
export abstract class XschedPane extends Widget {
  constructor(readonly kind: PaneKind, cluster: string, clusterName: string) {
    super();
    this.id = `xsched-pane-${kind}`;
    this.addClass('xsched-Pane');
    this.addClass(`xsched-Pane-${kind}`);
    this.title.closable = true;
    this.title.caption = `xsched ${PANE_TITLES[kind]}`;
    this._banner = h('div', { class: 'xsched-PaneBanner', role: 'status' });
    this._banner.style.display = 'none';
    this.body = h('div', { class: 'xsched-PaneBody' });
    this.node.append(this._banner, this.body);
    this._banner.addEventListener('click', ev => {
      if ((ev.target as HTMLElement).closest('[data-action="close-pane"]')) {
        this.close();
      }
    });
    this.cluster = cluster;
    this.setCluster(cluster, clusterName);
  }

  cluster: string;
  clusterName = '';
  readonly body: HTMLElement;

  /** Show another cluster (a pane per kind: opening it for another cluster moves it there). */
  setCluster(cluster: string, name: string): void {
    const changed = cluster !== this.cluster;
    this.cluster = cluster;
    this.clusterName = name || cluster;
    this.title.label = `${PANE_TITLES[this.kind]} · ${this.clusterName}`;
    this.node.setAttribute('data-cluster-id', cluster);
    this.setGone(false);
    if (changed) {
      this.clear();
    }
  }

  /** The cluster went away: say so and offer to close (or came back). */
  setGone(gone: boolean): void {
    this.gone = gone;
    this.node.classList.toggle('xsched-mod-gone', gone);
    if (gone) {
      this._banner.replaceChildren(
        h('span', {}, `The cluster ${this.clusterName} went away: it is no longer running.`),
        h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'close-pane' }, 'Close')
      );
    }
    this._banner.style.display = gone ? '' : 'none';
  }

  /** A transient problem (unreachable scheduler): shown until the next good message. */
  setError(error: string | null): void {
    if (this.gone) {
      return;
    }
    this._banner.replaceChildren(h('span', {}, error ? `No telemetry: ${error}` : ''));
    this._banner.style.display = error ? '' : 'none';
  }

  gone = false;

  /** New telemetry for this pane's cluster. */
  abstract receive(msg: ITelemetry): void;

  /** Forget what was shown (another cluster). */
  abstract clear(): void;

  private _banner: HTMLElement;
}

/** A pane that draws itself (SVG or canvas): redraws are coalesced into one per animation
 * frame, however many telemetry messages or resizes came since the last; a pane hidden
 * behind another tab draws nothing until it is shown (then once, with what it holds). */
export abstract class DrawnPane extends XschedPane {
  /** Redraw at the next animation frame (once, however many updates came). */
  schedule(): void {
    if (this.isAttached && !this.isVisible) {
      return; // (onAfterShow draws it)
    }
    if (this._frame === 0 && !this.isDisposed) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this.draw();
      });
    }
  }

  /** Draw what the pane holds now. */
  abstract draw(): void;

  /** Redraw when `el` changes size; a draw reads its size with ``sizeOf``, without a layout. */
  protected watchSize(el: Element): void {
    watchSize(el, () => this.schedule());
    this._watched.push(el);
  }

  dispose(): void {
    for (const el of this._watched.splice(0)) {
      unwatchSize(el);
    }
    super.dispose();
  }

  protected onAfterShow(): void {
    this.schedule();
  }

  private _frame = 0;
  private _watched: Element[] = [];
}
