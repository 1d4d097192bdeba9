// The profile: where the task threads spend their time, as an icicle graph (a flame graph
// drawn downwards) on a <canvas>. The workers sample their running tasks' stacks while this
// pane is open (the telemetry's "profile" part, xsched/profiling.py); the first row is the
// task prefix, each row below the functions called, a frame as wide as the samples that
// passed through it. Hover: function, file, samples; click: zoom into a frame; double
// click: the whole profile again. Reset: the scheduler starts its profile again (one for
// every dashboard), so a phase of the work can be looked at alone.
import {
  DrawnPane, ITelemetry, ProfileRow, clearCanvas, count, groupColour, h, isLightTheme, measureDraw, themeVar, timeOfDay
} from './common';

const ROW = 18; // px per call depth

/** A frame laid out: its row of the telemetry, depth and span [x0, x1) in samples. */
interface IFrame {
  row: ProfileRow;
  depth: number;
  x0: number;
  x1: number;
  parent: number; // index into the frames, -1 for a prefix
}

/** Ask the scheduler to start the cluster's profile again: the new profile's start (seconds
 * since the epoch). */
export type ProfileResetter = (cluster: string) => Promise<number>;

export class ProfilePane extends DrawnPane {
  constructor(cluster: string, clusterName: string, private resetter: ProfileResetter | null = null) {
    super('profile', cluster, clusterName);
    this.canvas = h('canvas', { class: 'xsched-ProfileCanvas', 'data-samples': 0, 'data-nodes': 0 }) as HTMLCanvasElement;
    this.watchSize(this.canvas);
    this._tip = h('div', { class: 'xsched-Tooltip' });
    this._tip.style.display = 'none';
    this._status = h('div', { class: 'xsched-TaskStreamStatus' });
    const bar = h('div', { class: 'xsched-ProfileBar' }, this._status);
    if (resetter) {
      const button = h('button', {
        class: 'jp-mod-styled xsched-Button', 'data-action': 'reset-profile',
        title: 'Start the profile again from now (for every dashboard of this cluster)'
      }, 'Reset') as HTMLButtonElement;
      button.addEventListener('click', () => void this._reset(button));
      bar.append(button);
    }
    this.body.append(bar, h('div', { class: 'xsched-TaskStreamBox' }, this.canvas, this._tip));
    this.canvas.addEventListener('mousemove', ev => this._hover(ev));
    this.canvas.addEventListener('mouseleave', () => (this._tip.style.display = 'none'));
    this.canvas.addEventListener('click', ev => {
      const i = this._at(ev);
      this._zoom = i >= 0 ? i : -1;
      this.schedule();
    });
    this.canvas.addEventListener('dblclick', () => {
      this._zoom = -1;
      this.schedule();
    });
  }

  readonly canvas: HTMLCanvasElement;

  clear(): void {
    this._frames = [];
    this._samples = 0;
    this._since = null;
    this._zoom = -1;
    this.schedule();
  }

  receive(msg: ITelemetry): void {
    const p = msg.profile;
    if (!p || (p.since ?? 0) < this._resetAt) {
      return; // (an answer asked for before the reset)
    }
    if (p.samples === this._samples && p.since === this._since && this._frames.length) {
      return; // (no worker answered since the last message: the same tree, not laid out again)
    }
    const zoomed = this._zoom >= 0 ? this._path(this._zoom) : null;
    this._samples = p.samples;
    this._since = p.since;
    this._frames = layout(p.rows);
    this._zoom = zoomed ? this._find(zoomed) : -1; // (the same frame in the new tree, if still there)
    this.schedule();
  }

  private async _reset(button: HTMLButtonElement): Promise<void> {
    if (!this.resetter) {
      return;
    }
    button.disabled = true;
    try {
      this._resetAt = await this.resetter(this.cluster);
      this.clear();
    } catch {
      // the resetter said why; the profile shown stays
    } finally {
      button.disabled = false;
    }
  }

  /** Draw the frames in view; measured as the performance entry "xsched-profile-draw". */
  draw(): void {
    performance.mark('xsched-profile-draw-start');
    const canvas = this.canvas;
    const { ctx, cssW, cssH } = clearCanvas(canvas);
    const frames = this._frames;
    canvas.setAttribute('data-samples', String(this._samples));
    canvas.setAttribute('data-nodes', String(frames.length));
    canvas.setAttribute('data-prefixes', frames.filter(f => f.depth === 0).map(f => f.row[1]).join(','));
    const [v0, v1, d0] = this._view();
    const scale = cssW / Math.max(v1 - v0, 1e-9);
    const light = isLightTheme();
    ctx.font = `${themeVar('--jp-ui-font-size0', '11px')} ${themeVar('--jp-ui-font-family', 'sans-serif')}`;
    ctx.textBaseline = 'middle';
    const text = themeVar('--jp-ui-font-color0', light ? '#000' : '#fff');
    for (const f of frames) {
      if (f.x1 <= v0 || f.x0 >= v1 || f.depth < d0) {
        continue;
      }
      const x = (Math.max(f.x0, v0) - v0) * scale;
      const w = (Math.min(f.x1, v1) - Math.max(f.x0, v0)) * scale;
      const y = (f.depth - d0) * ROW;
      if (w < 0.5 || y > cssH) {
        continue;
      }
      ctx.fillStyle = groupColour(f.depth === 0 ? f.row[1] : `${f.row[1]} ${f.row[2]}`, light);
      ctx.fillRect(x, y, Math.max(w - 1, 0.5), ROW - 1);
      if (w > 40) {
        ctx.fillStyle = text;
        ctx.fillText(f.row[1], x + 3, y + ROW / 2, w - 6);
      }
    }
    this._status.textContent = this._samples
      ? `${count(this._samples)} samples of the task threads` +
        (this._since ? ` since ${timeOfDay(this._since)}` : '') +
        (this._zoom >= 0 ? ' · zoomed: double-click for the whole profile' : ' · click a frame to zoom in')
      : 'Sampling the workers\u2019 task threads: their stacks appear as tasks run.';
    measureDraw('xsched-profile-draw');
  }

  /** [first sample, last sample, first depth] in view: everything, or the zoomed frame. */
  private _view(): [number, number, number] {
    if (this._zoom >= 0 && this._zoom < this._frames.length) {
      const f = this._frames[this._zoom];
      return [f.x0, f.x1, f.depth];
    }
    return [0, Math.max(this._samples, 1), 0];
  }

  /** The frame under the pointer, or -1. */
  private _at(ev: MouseEvent): number {
    const rect = this.canvas.getBoundingClientRect();
    const [v0, v1, d0] = this._view();
    const depth = Math.floor((ev.clientY - rect.top) / ROW) + d0;
    const s = v0 + ((ev.clientX - rect.left) / Math.max(rect.width, 1)) * (v1 - v0);
    return this._frames.findIndex(f => f.depth === depth && f.x0 <= s && s < f.x1);
  }

  private _hover(ev: MouseEvent): void {
    const i = this._at(ev);
    if (i < 0) {
      this._tip.style.display = 'none';
      return;
    }
    const [, fn, file, samples, own] = this._frames[i].row;
    const share = this._samples ? ((100 * samples) / this._samples).toFixed(1) : '0';
    this._tip.replaceChildren(
      h('div', { class: 'xsched-TooltipKey' }, fn),
      ...(file ? [h('div', {}, file)] : [h('div', {}, 'task prefix')]),
      h('div', {}, `${count(samples)} samples (${share}%), ${count(own)} in it`)
    );
    const rect = this.canvas.getBoundingClientRect();
    this._tip.style.display = '';
    this._tip.style.left = `${Math.min(ev.clientX - rect.left + 12, rect.width - 260)}px`;
    this._tip.style.top = `${ev.clientY - rect.top + 12}px`;
  }

  /** The (function, file) labels from the prefix down to frame `i`. */
  private _path(i: number): string[] {
    const out: string[] = [];
    for (let j = i; j >= 0; j = this._frames[j].parent) {
      out.unshift(`${this._frames[j].row[1]}\u0000${this._frames[j].row[2]}`);
    }
    return out;
  }

  private _find(path: string[]): number {
    return this._frames.findIndex((_, i) => {
      const p = this._path(i);
      return p.length === path.length && p.every((label, k) => label === path[k]);
    });
  }

  private _frames: IFrame[] = [];
  private _samples = 0;
  private _since: number | null = null;
  private _resetAt = 0;
  private _zoom = -1;
  private _tip: HTMLElement;
  private _status: HTMLElement;
}

/** Frames of preorder rows ([depth, function, file, count, own], a child after its parent):
 * each child starts where its previous sibling ended, the first one at its parent's start. */
export function layout(rows: ProfileRow[]): IFrame[] {
  const frames: IFrame[] = [];
  const open: number[] = []; // open[d]: the frame of depth d rows now go under (d - 1's child)
  const next: number[] = [0]; // next[d]: where the next frame of depth d starts
  for (const row of rows) {
    const depth = row[0];
    if (depth > open.length) {
      continue; // (malformed: a row deeper than its parent's child)
    }
    open.length = depth;
    next.length = depth + 1;
    const parent = depth > 0 ? open[depth - 1] : -1;
    const x0 = next[depth] ?? (parent >= 0 ? frames[parent].x0 : 0);
    const frame: IFrame = { row, depth, x0, x1: x0 + row[3], parent };
    frames.push(frame);
    next[depth] = frame.x1;
    open.push(frames.length - 1);
    next.push(x0); // its first child starts where it does
  }
  return frames;
}
