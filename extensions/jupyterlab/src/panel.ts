// The sidebar panel: clusters, live worker rows, task groups. Plain DOM in a Lumino widget;
// rows are keyed (cluster id, worker address) and updated in place, clicks are delegated
// through data-action attributes so a refresh never eats a click.
import { Widget } from '@lumino/widgets';

import {
  IClusterDetail,
  IClusterSummary,
  IStoryEntry,
  ITaskGroup,
  IWorkerRow,
  Updates
} from './api';
import {
  KeyedRows, MEMORY_SEGMENTS, bytes, h, keepInOrder, setAttr, setBar, setMemoryBar, setText, stackedBar
} from './panes/common';

export interface IPanelActions {
  insertClient(cluster: IClusterSummary): void;
  openConsole(cluster: IClusterSummary, target: string): Promise<void>;
  showStory(cluster: IClusterSummary, key: string): Promise<void>;
  debug(cluster: IClusterSummary, worker: string, key: string): Promise<void>;
  newCluster(): Promise<void>;
  scale(cluster: IClusterSummary, n: number): Promise<void>;
  shutdown(cluster: IClusterSummary): Promise<void>;
  /** open a main-area pane (task-stream, progress, worker-memory, workers, timeline, logs, story) of the cluster */
  openPane(cluster: IClusterSummary, kind: string): void;
  /** open the panes of the default layout for this cluster */
  openLayout(cluster: IClusterSummary): void;
}

const SELECTED_KEY = 'xsched-labextension:selected';
/** keys of a group shown at first, and how many more each "+N more" shows */
const KEYS_FIRST = 8;
const KEYS_STEP = 16;
/** a non-breaking space: a number and its unit never part at a line end */
const NBSP = '\u00a0';


/** "1 thread", "2 tasks": a count and its noun, kept on one line. */
function counted(n: number, noun: string): string {
  return `${n}${NBSP}${noun}${n === 1 ? '' : 's'}`;
}

/** "09:05" in the browser's time zone, from seconds since the epoch. */
function clock(seconds: number): string {
  return new Date(seconds * 1000).toLocaleTimeString([], {
    hour: '2-digit',
    minute: '2-digit',
    hour12: false
  });
}

/** What a cluster card is called: the name a person chose, else "host · started HH:MM". */
export function clusterLabel(c: IClusterSummary): string {
  if (c.named || !c.hostname || !c.started) {
    return c.name;
  }
  return `${c.hostname} · started ${clock(c.started)}`;
}

/** The card's tooltip: id, host, pid, start time, address. */
function clusterTitle(c: IClusterSummary): string {
  return [
    c.named ? c.name : null,
    `id: ${c.id}`,
    c.hostname ? `host: ${c.hostname}` : null,
    c.pid ? `pid: ${c.pid}` : null,
    c.started ? `started: ${new Date(c.started * 1000).toLocaleString()}` : null,
    `address: ${c.address}`
  ]
    .filter(line => line !== null)
    .join('\n');
}

/** "+12 ms", "+1.25 s", "+2 min 5 s": a time since the story's first transition. */
export function sinceStart(seconds: number): string {
  if (seconds < 1) {
    return `+${Math.round(seconds * 1000)}${NBSP}ms`;
  }
  if (seconds < 120) {
    return `+${seconds.toFixed(2)}${NBSP}s`;
  }
  return `+${Math.floor(seconds / 60)}${NBSP}min ${Math.round(seconds % 60)}${NBSP}s`;
}

/** The story of a key as a table: time since its first transition, from -> to, worker, stimulus. */
export function storyTable(entries: (IStoryEntry | unknown[])[]): HTMLElement {
  // an older server sends (key, start, finish, stimulus_id) tuples: no time, no worker
  const rows: IStoryEntry[] = entries.map(e =>
    Array.isArray(e)
      ? { time: null, start: String(e[1]), finish: String(e[2]), worker: null, stimulus_id: String(e[3]) }
      : (e as IStoryEntry)
  );
  if (!rows.length) {
    return h('div', { class: 'xsched-Empty' }, 'No transitions recorded (the key may have been forgotten).');
  }
  const timed = rows.filter(r => typeof r.time === 'number');
  const t0 = timed.length ? (timed[0].time as number) : 0;
  const table = h(
    'table',
    { class: 'xsched-Story' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { title: 'since the first recorded transition' }, 'time'),
        h('th', {}, 'transition'),
        h('th', {}, 'worker'),
        h('th', { title: 'the event that caused it' }, 'stimulus')
      )
    ),
    h(
      'tbody',
      {},
      ...rows.map(r =>
        h(
          'tr',
          { class: `xsched-state-${r.finish}` },
          h(
            'td',
            { class: 'xsched-StoryTime', title: r.time ? new Date(r.time * 1000).toISOString() : 'before the panel watched this cluster' },
            typeof r.time === 'number' ? sinceStart(r.time - t0) : '–'
          ),
          h('td', { class: 'xsched-StoryTransition' }, `${r.start} → ${r.finish}`),
          h('td', { class: 'xsched-StoryWorker', title: r.worker || '' }, r.worker || ''),
          h('td', { class: 'xsched-StoryStimulus', title: r.stimulus_id || '' }, r.stimulus_id || '')
        )
      )
    )
  );
  // the dialog lays out its body widget's node: the table goes inside a plain box
  return h('div', { class: 'xsched-StoryBox' }, table);
}

export class ClusterPanel extends Widget {
  constructor(private actions: IPanelActions) {
    super();
    this.id = 'xsched-cluster-panel';
    this.addClass('xsched-Panel');
    this.title.caption = 'xsched clusters';

    this._status = h('span', { class: 'xsched-Status', title: 'live updates' });
    const header = h(
      'div',
      { class: 'xsched-Header' },
      h('span', { class: 'xsched-Title' }, 'xsched clusters'),
      this._status,
      h(
        'button',
        {
          class: 'jp-mod-styled xsched-Button',
          'data-action': 'new-cluster',
          title: 'Start a LocalCluster owned by this JupyterLab server'
        },
        'New cluster'
      )
    );
    this._list = h('ul', { class: 'xsched-ClusterList' });
    this._empty = h(
      'div',
      { class: 'xsched-Empty' },
      'No running xsched cluster. Start one in a notebook (LocalCluster()), in a terminal ' +
        '(xsched scheduler), or with "New cluster".'
    );
    this._detail = h('div', { class: 'xsched-Detail' });
    this.node.append(header, this._empty, this._list, this._detail);
    this.node.addEventListener('click', ev => this._onClick(ev));
  }

  readonly updates = new Updates(
    msg => this._onUpdate(msg),
    ok => {
      this._status.textContent = ok ? '● live' : '○ reconnecting';
      this._status.classList.toggle('xsched-mod-live', ok);
    }
  );

  /** every cluster of the last update */
  get clusters(): IClusterSummary[] {
    return this._clusters;
  }

  get selected(): IClusterSummary | null {
    return this._clusters.find(c => c.id === this._selectedId) || null;
  }

  protected onAfterAttach(): void {
    this.updates.open();
  }

  dispose(): void {
    this.updates.dispose();
    super.dispose();
  }

  select(id: string | null): void {
    this._selectedId = id;
    try {
      if (id) {
        window.localStorage.setItem(SELECTED_KEY, id);
      }
    } catch {
      // no storage: the first cluster is selected after a reload
    }
    this._detailData = null;
    this._workerRows.clear();
    this._groupsJSON = '';
    this._keysShown.clear();
    this._scaleEdited = false;
    this._detail.replaceChildren();
    this.updates.subscribe(id);
    this._renderList();
  }

  // ------------------------------------------------------------ updates
  private _onUpdate(msg: any): void {
    if (msg.type === 'clusters') {
      this._clusters = msg.clusters as IClusterSummary[];
      if (
        this._selectedId &&
        !this._clusters.some(c => c.id === this._selectedId)
      ) {
        this.select(null);
      }
      if (!this._selectedId && this._clusters.length > 0) {
        let last: string | null = null;
        try {
          last = window.localStorage.getItem(SELECTED_KEY);
        } catch {
          last = null;
        }
        const again = this._clusters.find(c => c.id === last);
        this.select((again || this._clusters[0]).id);
      }
      this._renderList();
    } else if (msg.type === 'detail' && msg.id === this._selectedId) {
      this._detailData = msg.detail as IClusterDetail | null;
      this._renderDetail();
    }
  }

  private _renderList(): void {
    this._empty.style.display = this._clusters.length ? 'none' : '';
    const rows = this._clusters.map(c => {
      const li = this._listRows.row(c.id);
      setAttr(li, 'data-cluster-address', c.address);
      li.classList.toggle('xsched-mod-selected', c.id === this._selectedId);
      li.classList.toggle('xsched-mod-unreachable', c.status !== 'running');
      setAttr(li, 'title', clusterTitle(c));
      const [name, address, stats] = Array.from(li.children) as HTMLElement[];
      const label = clusterLabel(c);
      // (rebuilt only when the name or the "panel" badge changes)
      if (name.firstChild?.textContent !== label || !!name.children.length !== !!c.owned) {
        name.replaceChildren(label, ...(c.owned ? [h('span', { class: 'xsched-Badge' }, 'panel')] : []));
      }
      setText(address, c.address);
      setText(
        stats,
        c.status === 'running'
          ? `${counted(c.workers, 'worker')} · ${counted(c.threads, 'thread')} · ${bytes(c.memory)} / ${bytes(c.memory_limit)}`
          : c.status === 'connecting'
            ? 'connecting…'
            : `unreachable: ${c.error || ''}`
      );
      return li;
    });
    keepInOrder(this._list, rows); // the server's order
    this._listRows.sweep();
  }

  private _renderDetail(): void {
    const d = this._detailData;
    const c = this.selected;
    if (!d || !c) {
      this._detail.replaceChildren();
      this._workerRows.clear();
      return;
    }
    if (!this._detail.firstChild) {
      this._buildDetail(c);
    }
    this._summary.textContent =
      `${d.n_workers} workers, ${d.threads} threads, ${bytes(d.memory)} of ` +
      `${bytes(d.memory_limit)}; tasks: ` +
      (Object.entries(d.tasks || {})
        .map(([s, n]) => `${n} ${s}`)
        .join(', ') || 'none');
    this._ownedBox.style.display = c.owned ? '' : 'none';
    // the scale box follows the live worker count, unless someone is typing a new one
    if (document.activeElement !== this._scaleInput && !this._scaleEdited) {
      this._scaleInput.value = String(d.n_workers);
    }
    this._renderWorkers(d.workers);
    this._renderGroups(d.groups);
  }

  private _buildDetail(c: IClusterSummary): void {
    this._summary = h('div', { class: 'xsched-Summary' });
    this._scaleInput = h('input', {
      class: 'jp-mod-styled xsched-ScaleInput',
      type: 'number',
      min: 0,
      max: 64,
      value: c.workers,
      'aria-label': 'workers',
      title: 'number of workers: type one and press Scale'
    }) as HTMLInputElement;
    this._scaleInput.addEventListener('input', () => {
      this._scaleEdited = true;
    });
    this._scaleInput.addEventListener('blur', () => {
      // a number typed and left: the live count again after a moment (a click on Scale reads it first)
      window.setTimeout(() => {
        if (document.activeElement !== this._scaleInput) {
          this._scaleEdited = false;
        }
      }, 3000);
    });
    this._scaleInput.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        (this._ownedBox.querySelector('[data-action="scale"]') as HTMLElement | null)?.click();
      }
    });
    this._ownedBox = h(
      'div',
      { class: 'xsched-Owned' },
      this._scaleInput,
      h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'scale' }, 'Scale'),
      h('button', { class: 'jp-mod-styled xsched-Button xsched-mod-danger', 'data-action': 'shutdown' }, 'Shut down')
    );
    this._workerBody = h('tbody');
    this._groups = h('div', { class: 'xsched-Groups' });
    this._detail.replaceChildren(
      h(
        'div',
        { class: 'xsched-Actions' },
        h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'insert-client', title: 'Insert a cell with a Client for this cluster into the active notebook' }, 'Insert client'),
        h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'console', 'data-target': 'scheduler', title: 'Open a console on the kernel inside the scheduler' }, 'Scheduler console')
      ),
      h(
        'div',
        { class: 'xsched-Actions xsched-PaneButtons', 'aria-label': 'open a pane in the main area' },
        ...[
          ['task-stream', 'Task stream'],
          ['progress', 'Progress'],
          ['worker-memory', 'Memory'],
          ['workers', 'Workers'],
          ['timeline', 'Timeline'],
          ['logs', 'Logs'],
          ['story', 'Story'],
          ['profile', 'Profile'],
          ['graph', 'Graph'],
          ['call-stack', 'Stacks']
        ].map(([kind, label]) =>
          h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'open-pane', 'data-pane': kind, title: `Open the ${label.toLowerCase()} pane of this cluster in the main area` }, label)
        ),
        h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'open-layout', title: 'Open the panes of the default layout (the xsched setting "defaultLayout") beside the notebook' }, 'Layout')
      ),
      this._ownedBox,
      this._summary,
      h('h3', { class: 'xsched-Heading' }, 'Workers'),
      // one row per worker, laid out as a small card (name, address, memory bar, counts):
      // readable in a narrow sidebar; the rows stay <tr data-worker-address> for styling
      h('table', { class: 'xsched-Workers', 'aria-label': 'workers' }, this._workerBody),
      h('h3', { class: 'xsched-Heading' }, 'Task groups'),
      this._groups
    );
  }

  private _renderWorkers(rows: IWorkerRow[]): void {
    // (rows kept, and only what changed written: the sidebar refreshes every second)
    const order = rows.map(w => {
      const tr = this._workerRows.row(w.address);
      const q = (s: string) => tr.querySelector(s) as HTMLElement;
      const name = q('.xsched-WorkerName');
      setText(name, w.name);
      setAttr(name, 'title', `worker ${w.name}` + (w.status && w.status !== 'running' ? ` (${w.status})` : ''));
      const paused = !!w.status && w.status !== 'running';
      if (tr.classList.contains('xsched-mod-paused') !== paused) {
        tr.classList.toggle('xsched-mod-paused');
      }
      setMemoryBar(q('.xsched-Bar'), w);
      setText(q('.xsched-BarLabel'),
        `${bytes(w.managed + w.unmanaged)} / ${w.memory_limit ? bytes(w.memory_limit) : '∞'}`);
      const spilled = q('.xsched-WorkerSpilled');
      setText(spilled, w.spilled ? `+${bytes(w.spilled)} spilled` : '');
      setAttr(spilled, 'style.display', w.spilled ? '' : 'none');
      setText(q('.xsched-WorkerThreads'), counted(w.nthreads, 'thread'));
      setText(q('.xsched-WorkerProcessing'), counted(w.processing, 'task'));
      return tr;
    });
    keepInOrder(this._workerBody, order); // the server's order (natural, by name then address)
    this._workerRows.sweep();
  }

  private _renderGroups(groups: ITaskGroup[]): void {
    const json = JSON.stringify(groups);
    if (json === this._groupsJSON) {
      return;
    }
    this._groupsJSON = json;
    if (!groups.length) {
      this._groups.replaceChildren(h('div', { class: 'xsched-Empty' }, 'No tasks.'));
      return;
    }
    this._groups.replaceChildren(
      ...groups.map(g => {
        const n = (s: string) => g.states[s] || 0;
        // label and bar count the same: done = in memory, released or forgotten; erred apart
        const done = n('memory') + n('released') + n('forgotten');
        const erred = n('erred');
        const shown = Math.min(g.keys.length, this._keysShown.get(g.name) || KEYS_FIRST);
        const hidden = g.total - shown;
        const hiddenListed = g.keys.length - shown;
        let more: HTMLElement | null = null;
        if (hiddenListed > 0) {
          more = h(
            'button',
            {
              class: 'xsched-Key xsched-MoreKeys',
              'data-action': 'more-keys',
              'data-group': g.name,
              title: `show ${Math.min(KEYS_STEP, hiddenListed)} more keys of ${g.name}`
            },
            `+${hidden}${NBSP}more`
          );
        } else if (hidden > 0) {
          more = h(
            'span',
            { class: 'xsched-MoreKeys xsched-mod-unlisted', title: `the panel lists ${g.keys.length} keys per group` },
            `+${hidden}${NBSP}not listed`
          );
        }
        const bar = stackedBar('', ['done', 'processing', 'erred']);
        setBar(bar, { done, processing: n('processing'), erred }, g.total,
          `${done} of ${g.total} done, ${n('processing')} processing` + (erred ? `, ${erred} erred` : ''));
        return h(
          'div',
          { class: 'xsched-Group', 'data-group': g.name, 'data-done': done, 'data-total': g.total },
          h(
            'div',
            { class: 'xsched-GroupName' },
            h('span', { class: 'xsched-GroupTitle', title: g.name }, g.name),
            h(
              'span',
              { class: 'xsched-GroupCount', title: 'done (in memory, released or forgotten) of all tasks' },
              `${done} / ${g.total}`
            ),
            erred ? h('span', { class: 'xsched-GroupErred' }, `${erred}${NBSP}erred`) : null,
            g.paused
              ? h(
                  'span',
                  { class: 'xsched-GroupPaused', title: 'paused at a breakpoint: debug them from their keys' },
                  `${g.paused}${NBSP}paused`
                )
              : null
          ),
          bar,
          h(
            'div',
            { class: 'xsched-Keys' },
            ...g.keys.slice(0, shown).flatMap(k => {
              const state = k.paused ? 'paused' : k.state;
              const key = h('button', { class: `xsched-Key xsched-state-${state}`, 'data-action': 'story', 'data-key': k.key, title: `${state}: show the story of ${k.key}` }, k.key);
              if (!k.worker) {
                return [key];
              }
              // a failed task's frames, or a paused task, wait on its worker: pdb in a console there
              const debug = h(
                'button',
                {
                  class: 'xsched-Key xsched-Debug',
                  'data-action': 'debug',
                  'data-key': k.key,
                  'data-target': k.worker,
                  title: `debug ${k.key} in a console on ${k.worker}`,
                  'aria-label': `debug ${k.key}`
                },
                'debug'
              );
              return [key, debug];
            }),
            more
          )
        );
      })
    );
  }

  // ------------------------------------------------------------ clicks
  private _onClick(ev: MouseEvent): void {
    const el = (ev.target as HTMLElement).closest('[data-action]') as HTMLElement | null;
    if (!el || !this.node.contains(el)) {
      return;
    }
    const action = el.getAttribute('data-action');
    const c = this.selected;
    const run = (p: Promise<void>) => {
      el.setAttribute('disabled', '');
      p.finally(() => el.removeAttribute('disabled'));
    };
    switch (action) {
      case 'select':
        this.select(el.getAttribute('data-cluster-id'));
        break;
      case 'new-cluster':
        run(this.actions.newCluster());
        break;
      case 'open-pane':
        if (c) {
          this.actions.openPane(c, el.getAttribute('data-pane') || 'workers');
        }
        break;
      case 'open-layout':
        if (c) {
          this.actions.openLayout(c);
        }
        break;
      case 'insert-client':
        if (c) {
          this.actions.insertClient(c);
        }
        break;
      case 'console':
        if (c) {
          run(this.actions.openConsole(c, el.getAttribute('data-target') || 'scheduler'));
        }
        break;
      case 'more-keys': {
        const group = el.getAttribute('data-group') || '';
        this._keysShown.set(group, (this._keysShown.get(group) || KEYS_FIRST) + KEYS_STEP);
        this._groupsJSON = '';
        if (this._detailData) {
          this._renderGroups(this._detailData.groups);
        }
        break;
      }
      case 'story':
        if (c) {
          void this.actions.showStory(c, el.getAttribute('data-key') || '');
        }
        break;
      case 'debug':
        if (c) {
          run(this.actions.debug(c, el.getAttribute('data-target') || '', el.getAttribute('data-key') || ''));
        }
        break;
      case 'scale':
        if (c) {
          const n = parseInt(this._scaleInput.value, 10) || 0;
          this._scaleEdited = false;
          run(this.actions.scale(c, n));
        }
        break;
      case 'shutdown':
        if (c) {
          run(this.actions.shutdown(c));
        }
        break;
    }
  }

  private _status: HTMLElement;
  private _list: HTMLElement;
  private _empty: HTMLElement;
  private _detail: HTMLElement;
  private _summary!: HTMLElement;
  private _ownedBox!: HTMLElement;
  private _scaleInput!: HTMLInputElement;
  private _workerBody!: HTMLElement;
  private _groups!: HTMLElement;
  private _groupsJSON = '';
  private _keysShown = new Map<string, number>();
  private _scaleEdited = false;
  private _clusters: IClusterSummary[] = [];
  private _selectedId: string | null = null;
  private _detailData: IClusterDetail | null = null;
  /** one card per cluster id: a name, the address and the figures */
  private _listRows = new KeyedRows(id =>
    h(
      'li',
      { class: 'xsched-Cluster', 'data-action': 'select', 'data-cluster-id': id },
      h('div', { class: 'xsched-ClusterName' }),
      h('div', { class: 'xsched-ClusterAddress' }),
      h('div', { class: 'xsched-ClusterStats' })
    )
  );
  private _workerRows = new KeyedRows(address =>
    h(
      'tr',
      { class: 'xsched-Worker', 'data-worker-address': address },
      h(
        'td',
        { class: 'xsched-WorkerCard' },
        h(
          'div',
          { class: 'xsched-WorkerHead' },
          h('span', { class: 'xsched-WorkerName' }),
          h(
            'button',
            {
              class: 'jp-mod-styled xsched-Button xsched-WorkerConsole',
              'data-action': 'console',
              'data-target': address,
              title: `Open a console on the kernel inside ${address}`,
              'aria-label': `Console on ${address}`
            },
            '›_'
          )
        ),
        // the full address in the title; shown without "tcp://", cut at the end if need be
        h('div', { class: 'xsched-WorkerAddress', title: address }, address.replace(/^tcp:\/\//, '')),
        stackedBar('', MEMORY_SEGMENTS),
        h(
          'div',
          { class: 'xsched-WorkerStats' },
          h('span', { class: 'xsched-BarLabel' }),
          h('span', { class: 'xsched-WorkerSpilled' }),
          h('span', { class: 'xsched-WorkerThreads', title: 'threads' }),
          h('span', { class: 'xsched-WorkerProcessing', title: 'tasks processing' })
        )
      )
    )
  );
}
