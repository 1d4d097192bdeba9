// The task-group graph: one node per task group, an arrow from each group to the groups its
// tasks feed, laid out in columns from the inputs (left) to the results (right). A node is
// coloured by its state (waiting, running, done, erred) and carries a bar of its counts.
//
//   telemetry `groups` (counts per group, in the order they appeared) and `group_edges`
//   ([from, to] pairs, read by the scheduler from a few tasks of each group)
//   -> columns: a group's column is one more than the furthest of the groups it depends on
//      (an edge closing a cycle -- two layers sharing a name -- is left out of that count)
//   -> within a column: the groups in the order of the mean row of what feeds them
//   -> SVG, rebuilt only when the groups or edges change; counts alone update the bars
//   a click on a node --group fetcher (the lab: GET clusters/<id>/group?name=; the page: GET
//   api/group?name=)--> its keys, failed and running first, listed under the graph; a click
//   on a key opens it in the story pane (and from there a console with its value)
import { GroupFetcher, IGroupKeysReply, ITelemetry, ITelemetryGroup, KeyOpener, XschedPane, h, svg } from './common';

const NODE_W = 168; // px
const NODE_H = 36;
const COL_GAP = 56; // between columns, for the arrows
const ROW_GAP = 12;
const PAD = 12;
/** groups drawn at most (the most recent ones beyond: a note says how many are left out) */
export const MAX_NODES = 300;

type State = 'waiting' | 'running' | 'done' | 'erred';

function stateOf(g: ITelemetryGroup): State {
  if (g.erred > 0) {
    return 'erred';
  }
  if (g.total > 0 && g.done === g.total) {
    return 'done';
  }
  return g.processing > 0 || g.done > 0 ? 'running' : 'waiting';
}

/** Column of each group: 0 for groups fed by none drawn, else 1 + the furthest feeding one. */
export function columns(names: string[], edges: [string, string][]): Map<string, number> {
  const deps = new Map<string, string[]>(names.map(n => [n, []]));
  for (const [from, to] of edges) {
    if (deps.has(from) && deps.has(to) && from !== to) {
      deps.get(to)!.push(from);
    }
  }
  const col = new Map<string, number>();
  const onStack = new Set<string>();
  const visit = (start: string): void => {
    // iterative depth-first walk (deep pipelines must not overflow the stack)
    const stack: [string, number][] = [[start, 0]];
    onStack.add(start);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [name, i] = top;
      const ds = deps.get(name)!;
      if (i < ds.length) {
        top[1]++;
        const d = ds[i];
        if (!col.has(d) && !onStack.has(d)) {
          onStack.add(d);
          stack.push([d, 0]);
        }
        continue;
      }
      let c = 0;
      for (const d of ds) {
        if (col.has(d)) {
          c = Math.max(c, col.get(d)! + 1); // (a dependency still on the stack closes a cycle)
        }
      }
      col.set(name, c);
      onStack.delete(name);
      stack.pop();
    }
  };
  for (const n of names) {
    if (!col.has(n)) {
      visit(n);
    }
  }
  return col;
}

export class GraphPane extends XschedPane {
  constructor(cluster: string, clusterName: string, private fetchGroup: GroupFetcher | null = null,
    private openKey: KeyOpener | null = null) {
    super('graph', cluster, clusterName);
    this._empty = h('div', { class: 'xsched-Empty' }, 'No tasks yet.');
    this._note = h('div', { class: 'xsched-GraphNote' });
    this._svg = svg('svg', { class: 'xsched-GraphSvg', 'data-nodes': 0, 'data-edges': 0, role: 'img' }) as SVGSVGElement;
    this._svg.setAttribute('aria-label', 'task groups and how they feed each other');
    this._box = h('div', { class: 'xsched-GraphBox' });
    this._box.append(this._svg);
    this._keys = h('div', { class: 'xsched-GraphKeys', 'data-group': '' });
    this._keys.style.display = 'none';
    this.body.append(this._empty, this._note, this._box, this._keys);
    this._svg.addEventListener('click', ev => {
      const node = (ev.target as Element).closest('[data-group]');
      const name = node?.getAttribute('data-group');
      if (name) {
        void this.showGroup(name);
      }
    });
    this._keys.addEventListener('click', ev => {
      const el = (ev.target as HTMLElement).closest('[data-action]');
      const action = el?.getAttribute('data-action');
      if (action === 'open-key' && this.openKey) {
        this.openKey(this.cluster, el!.getAttribute('data-key')!);
      } else if (action === 'close-group') {
        this._closeGroup();
      }
    });
  }

  /** the group whose keys are listed ('' for none) */
  group = '';

  /** List the keys of task group `name` under the graph (asked now; a click asks again). */
  async showGroup(name: string): Promise<void> {
    if (!this.fetchGroup) {
      return;
    }
    this.group = name;
    this._keys.setAttribute('data-group', name);
    this._keys.style.display = '';
    this._keys.replaceChildren(h('div', { class: 'xsched-GraphKeysStatus', role: 'status' }, `Asking for the keys of ${name}…`));
    let reply: IGroupKeysReply;
    try {
      reply = await this.fetchGroup(this.cluster, name);
    } catch (e) {
      if (this.group === name) {
        this._keys.replaceChildren(h('div', { class: 'xsched-GraphKeysStatus', role: 'status' },
          `No keys of ${name}: ${e instanceof Error ? e.message : String(e)}`));
      }
      return;
    }
    if (this.group !== name) {
      return;
    }
    const listed = reply.keys.length;
    const head = h('div', { class: 'xsched-GraphKeysHead' },
      h('span', { class: 'xsched-GraphKeysStatus', role: 'status' },
        `${name}: ${listed === reply.total ? `${listed} key${listed === 1 ? '' : 's'}` : `${listed} of ${reply.total} keys`}` +
        (listed ? (this.openKey ? ', failed and running first: click one for its story' : ', failed and running first') : '')),
      h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'close-group', title: 'hide the keys' }, 'Close'));
    const keys = h('div', { class: 'xsched-Keys' },
      ...reply.keys.map(k => h('button', {
        class: `xsched-Key xsched-state-${k.state}`, 'data-action': 'open-key', 'data-key': k.key, 'data-state': k.state,
        title: `${k.key}: ${k.state}${k.worker ? ` on ${k.worker}` : ''}`, disabled: !this.openKey
      }, k.key)));
    this._keys.replaceChildren(head, keys);
  }

  private _closeGroup(): void {
    this.group = '';
    this._keys.setAttribute('data-group', '');
    this._keys.style.display = 'none';
    this._keys.replaceChildren();
  }

  clear(): void {
    this._closeGroup();
    this._shape = '';
    this._nodes.clear();
    this._svg.replaceChildren();
    this._svg.setAttribute('data-nodes', '0');
    this._svg.setAttribute('data-edges', '0');
    this._empty.style.display = '';
    this._note.textContent = '';
  }

  receive(msg: ITelemetry): void {
    if (!msg.groups) {
      return;
    }
    const groups = msg.groups.slice(-MAX_NODES);
    const left = msg.groups.length - groups.length;
    this._note.textContent = left ? `${left} older groups are not drawn.` : '';
    this._empty.style.display = groups.length ? 'none' : '';
    const names = groups.map(g => g.name);
    const drawn = new Set(names);
    const edges = (msg.group_edges || []).filter(([a, b]) => drawn.has(a) && drawn.has(b) && a !== b);
    const shape = JSON.stringify([names, edges]);
    if (shape !== this._shape) {
      this._shape = shape;
      this._place(names, edges);
    }
    for (const g of groups) {
      this._update(g);
    }
  }

  /** Place the nodes and draw the arrows (the counts are filled in by `_update`). */
  private _place(names: string[], edges: [string, string][]): void {
    const col = columns(names, edges);
    const byCol: string[][] = [];
    for (const n of names) {
      (byCol[col.get(n)!] ||= []).push(n); // (first seen first)
    }
    const row = new Map<string, number>();
    const feeders = new Map<string, string[]>();
    for (const [from, to] of edges) {
      (feeders.get(to) || feeders.set(to, []).get(to)!).push(from);
    }
    byCol.forEach((members, c) => {
      if (c > 0) {
        // the mean row of what feeds each group: arrows cross less
        const weight = (n: string): number => {
          const rows = (feeders.get(n) || []).filter(f => row.has(f)).map(f => row.get(f)!);
          return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Infinity;
        };
        const order = new Map(members.map((n, i) => [n, i]));
        members.sort((a, b) => weight(a) - weight(b) || order.get(a)! - order.get(b)!);
      }
      members.forEach((n, i) => row.set(n, i));
    });
    const x = (n: string) => PAD + col.get(n)! * (NODE_W + COL_GAP);
    const y = (n: string) => PAD + row.get(n)! * (NODE_H + ROW_GAP);
    const width = PAD * 2 + byCol.length * NODE_W + Math.max(byCol.length - 1, 0) * COL_GAP;
    const height = PAD * 2 + Math.max(0, ...byCol.map(m => m.length)) * (NODE_H + ROW_GAP) - ROW_GAP;
    this._svg.replaceChildren();
    this._nodes.clear();
    this._svg.setAttribute('width', String(width));
    this._svg.setAttribute('height', String(Math.max(height, 0)));
    this._svg.setAttribute('viewBox', `0 0 ${width} ${Math.max(height, 0)}`);
    const defs = svg('defs');
    const marker = svg('marker', { id: 'xsched-graph-arrow', viewBox: '0 0 8 8', refX: 8, refY: 4,
      markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
    marker.append(svg('path', { d: 'M0,0 L8,4 L0,8 z', class: 'xsched-GraphArrowHead' }));
    defs.append(marker);
    this._svg.append(defs);
    for (const [from, to] of edges) {
      const x1 = x(from) + NODE_W, y1 = y(from) + NODE_H / 2;
      const x2 = x(to), y2 = y(to) + NODE_H / 2;
      const bend = Math.max(Math.abs(x2 - x1) / 2, 24);
      const path = svg('path', {
        class: 'xsched-GraphEdge', d: `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`,
        'marker-end': 'url(#xsched-graph-arrow)', 'data-from': from, 'data-to': to
      });
      this._svg.append(path);
    }
    for (const n of names) {
      const g = svg('g', { class: 'xsched-GraphNode', transform: `translate(${x(n)},${y(n)})`, 'data-group': n,
        'data-column': col.get(n)! });
      const title = svg('title');
      g.append(
        title,
        svg('rect', { class: 'xsched-GraphRect', width: NODE_W, height: NODE_H, rx: 5 }),
        svg('rect', { class: 'xsched-GraphTrack', x: 6, y: NODE_H - 9, width: NODE_W - 12, height: 4, rx: 2 }),
        svg('rect', { class: 'xsched-GraphDone', x: 6, y: NODE_H - 9, width: 0, height: 4 }),
        svg('rect', { class: 'xsched-GraphProcessing', x: 6, y: NODE_H - 9, width: 0, height: 4 }),
        svg('rect', { class: 'xsched-GraphErred', x: 6, y: NODE_H - 9, width: 0, height: 4 })
      );
      const label = svg('text', { class: 'xsched-GraphLabel', x: 8, y: 15 });
      label.textContent = n.length > 24 ? `${n.slice(0, 23)}…` : n;
      const count = svg('text', { class: 'xsched-GraphCount', x: NODE_W - 8, y: 15, 'text-anchor': 'end' });
      g.append(label, count);
      this._svg.append(g);
      this._nodes.set(n, g);
    }
    this._svg.setAttribute('data-nodes', String(names.length));
    this._svg.setAttribute('data-edges', String(edges.length));
  }

  /** A node's state, bar and counts. */
  private _update(g: ITelemetryGroup): void {
    const node = this._nodes.get(g.name);
    if (!node) {
      return;
    }
    const state = stateOf(g);
    node.setAttribute('data-state', state);
    node.setAttribute('class', `xsched-GraphNode xsched-mod-${state}`);
    node.setAttribute('data-done', String(g.done));
    node.setAttribute('data-total', String(g.total));
    const span = NODE_W - 12;
    const w = (n: number) => (g.total ? (span * n) / g.total : 0);
    const set = (cls: string, x: number, width: number) => {
      const r = node.querySelector(`.${cls}`) as SVGRectElement;
      r.setAttribute('x', String(6 + x));
      r.setAttribute('width', String(Math.max(width, 0)));
    };
    set('xsched-GraphDone', 0, w(g.done));
    set('xsched-GraphProcessing', w(g.done), w(g.processing));
    set('xsched-GraphErred', w(g.done) + w(g.processing), w(g.erred));
    (node.querySelector('.xsched-GraphCount') as SVGTextElement).textContent = `${g.done}/${g.total}`;
    (node.querySelector('title') as unknown as SVGTitleElement).textContent =
      `${g.name}: ${g.done} done, ${g.processing} processing, ${g.erred} erred, ${g.waiting} waiting, of ${g.total}`;
  }

  private _shape = '';
  private _keys: HTMLElement;
  private _nodes = new Map<string, SVGElement>();
  private _svg: SVGSVGElement;
  private _box: HTMLElement;
  private _empty: HTMLElement;
  private _note: HTMLElement;
}
