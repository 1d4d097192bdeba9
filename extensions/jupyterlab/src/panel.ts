// The sidebar panel: clusters, live worker rows, task groups. Plain DOM in a Lumino widget;
// rows are keyed (cluster id, worker address) and updated in place, clicks are delegated
// through data-action attributes so a refresh never eats a click.
import { Widget } from '@lumino/widgets';

import {
  IClusterDetail,
  IClusterSummary,
  ITaskGroup,
  IWorkerRow,
  Updates
} from './api';

export interface IPanelActions {
  insertClient(cluster: IClusterSummary): void;
  openConsole(cluster: IClusterSummary, target: string): Promise<void>;
  showStory(cluster: IClusterSummary, key: string): Promise<void>;
  newCluster(): Promise<void>;
  scale(cluster: IClusterSummary, n: number): Promise<void>;
  shutdown(cluster: IClusterSummary): Promise<void>;
}

const SELECTED_KEY = 'xsched-labextension:selected';

type Attrs = { [name: string]: string | number | boolean | undefined };

function h(
  tag: string,
  attrs: Attrs = {},
  ...children: (Node | string | null)[]
): HTMLElement {
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

export function formatBytes(n: number): string {
  if (!n || n < 0) {
    return '0 B';
  }
  const units = ['B', 'kiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n >= 100 || i === 0 ? n.toFixed(0) : n.toFixed(1)} ${units[i]}`;
}

function pct(part: number, whole: number): string {
  if (!whole || whole <= 0) {
    return '0%';
  }
  return `${Math.max(0, Math.min(100, (100 * part) / whole)).toFixed(2)}%`;
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
    const seen = new Set<string>();
    for (const c of this._clusters) {
      seen.add(c.id);
      let li = this._listItems.get(c.id);
      if (!li) {
        li = h('li', {
          class: 'xsched-Cluster',
          'data-action': 'select',
          'data-cluster-id': c.id
        });
        this._listItems.set(c.id, li);
      }
      li.setAttribute('data-cluster-address', c.address);
      li.classList.toggle('xsched-mod-selected', c.id === this._selectedId);
      li.classList.toggle('xsched-mod-unreachable', c.status !== 'running');
      const stats =
        c.status === 'running'
          ? `${c.workers} workers · ${c.threads} threads · ${formatBytes(c.memory)} / ${formatBytes(c.memory_limit)}`
          : c.status === 'connecting'
            ? 'connecting…'
            : `unreachable: ${c.error || ''}`;
      li.replaceChildren(
        h('div', { class: 'xsched-ClusterName' }, c.name, c.owned ? h('span', { class: 'xsched-Badge' }, 'panel') : null),
        h('div', { class: 'xsched-ClusterAddress' }, c.address),
        h('div', { class: 'xsched-ClusterStats' }, stats)
      );
      this._list.append(li); // keeps the server's order
    }
    for (const [id, li] of this._listItems) {
      if (!seen.has(id)) {
        li.remove();
        this._listItems.delete(id);
      }
    }
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
      `${d.n_workers} workers, ${d.threads} threads, ${formatBytes(d.memory)} of ` +
      `${formatBytes(d.memory_limit)}; tasks: ` +
      (Object.entries(d.tasks || {})
        .map(([s, n]) => `${n} ${s}`)
        .join(', ') || 'none');
    this._ownedBox.style.display = c.owned ? '' : 'none';
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
      'aria-label': 'workers'
    }) as HTMLInputElement;
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
      this._ownedBox,
      this._summary,
      h('h3', { class: 'xsched-Heading' }, 'Workers'),
      h(
        'table',
        { class: 'xsched-Workers' },
        h(
          'thead',
          {},
          h('tr', {}, h('th', {}, 'worker · memory'), h('th', { title: 'threads' }, 'thr'), h('th', { title: 'tasks processing' }, 'tasks'), h('th', {}, ''))
        ),
        this._workerBody
      ),
      h('h3', { class: 'xsched-Heading' }, 'Task groups'),
      this._groups
    );
  }

  private _renderWorkers(rows: IWorkerRow[]): void {
    const seen = new Set<string>();
    for (const w of rows) {
      seen.add(w.address);
      let tr = this._workerRows.get(w.address);
      if (!tr) {
        tr = h(
          'tr',
          { class: 'xsched-Worker', 'data-worker-address': w.address },
          h(
            'td',
            { class: 'xsched-WorkerMain' },
            h('div', { class: 'xsched-WorkerName' }),
            h(
              'div',
              { class: 'xsched-Bar' },
              h('div', { class: 'xsched-Bar-managed' }),
              h('div', { class: 'xsched-Bar-unmanaged' }),
              h('div', { class: 'xsched-Bar-spilled' })
            ),
            h('div', { class: 'xsched-BarLabel' })
          ),
          h('td', { class: 'xsched-WorkerThreads' }),
          h('td', { class: 'xsched-WorkerProcessing' }),
          h(
            'td',
            {},
            h('button', { class: 'jp-mod-styled xsched-Button xsched-WorkerConsole', 'data-action': 'console', 'data-target': w.address, title: `Open a console on the kernel inside ${w.address}` }, 'Console')
          )
        ) as HTMLTableRowElement;
        this._workerRows.set(w.address, tr);
      }
      const q = (s: string) => tr!.querySelector(s) as HTMLElement;
      const nameCell = q('.xsched-WorkerName');
      nameCell.replaceChildren(
        h('div', {}, w.name),
        h('div', { class: 'xsched-WorkerAddress' }, w.address)
      );
      q('.xsched-WorkerThreads').textContent = String(w.nthreads);
      const limit = w.memory_limit || Math.max(w.rss, w.managed + w.unmanaged) || 1;
      q('.xsched-Bar-managed').style.width = pct(w.managed, limit);
      q('.xsched-Bar-unmanaged').style.width = pct(w.unmanaged, limit);
      q('.xsched-Bar-spilled').style.width = pct(w.spilled, limit);
      q('.xsched-Bar').title =
        `managed ${formatBytes(w.managed)}, unmanaged ${formatBytes(w.unmanaged)}, ` +
        `spilled ${formatBytes(w.spilled)}, limit ${w.memory_limit ? formatBytes(w.memory_limit) : 'none'}`;
      q('.xsched-BarLabel').textContent =
        `${formatBytes(w.managed + w.unmanaged)} / ${w.memory_limit ? formatBytes(w.memory_limit) : '∞'}` +
        (w.spilled ? ` (+${formatBytes(w.spilled)} spilled)` : '');
      q('.xsched-WorkerProcessing').textContent = String(w.processing);
      this._workerBody.append(tr);
    }
    for (const [addr, tr] of this._workerRows) {
      if (!seen.has(addr)) {
        tr.remove();
        this._workerRows.delete(addr);
      }
    }
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
        const done = n('memory') + n('released') + n('forgotten');
        return h(
          'div',
          { class: 'xsched-Group', 'data-group': g.name },
          h('div', { class: 'xsched-GroupName' }, g.name, h('span', { class: 'xsched-GroupCount' }, ` ${n('memory')} / ${g.total}` + (n('erred') ? ` · ${n('erred')} erred` : ''))),
          h(
            'div',
            { class: 'xsched-Bar' },
            h('div', { class: 'xsched-Bar-done', style: `width: ${pct(done, g.total)}` }),
            h('div', { class: 'xsched-Bar-processing', style: `width: ${pct(n('processing'), g.total)}` }),
            h('div', { class: 'xsched-Bar-erred', style: `width: ${pct(n('erred'), g.total)}` })
          ),
          h(
            'div',
            { class: 'xsched-Keys' },
            ...g.keys.map(k =>
              h('button', { class: `xsched-Key xsched-state-${k.state}`, 'data-action': 'story', 'data-key': k.key, title: `${k.state}: show the story of ${k.key}` }, k.key)
            )
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
      case 'story':
        if (c) {
          void this.actions.showStory(c, el.getAttribute('data-key') || '');
        }
        break;
      case 'scale':
        if (c) {
          run(this.actions.scale(c, parseInt(this._scaleInput.value, 10) || 0));
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
  private _clusters: IClusterSummary[] = [];
  private _selectedId: string | null = null;
  private _detailData: IClusterDetail | null = null;
  private _listItems = new Map<string, HTMLElement>();
  private _workerRows = new Map<string, HTMLTableRowElement>();
}
