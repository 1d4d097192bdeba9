// The workers table: one row per worker, sorted by the column whose header was clicked
// (again: the other way); names and addresses in natural order.
import { ITelemetry, ITelemetryWorker, XschedPane, bytes, h, KeyedRows, keepInOrder, naturalCompare, setText } from './common';

interface IColumn {
  key: string;
  label: string;
  value: (w: ITelemetryWorker) => number | string;
  show?: (w: ITelemetryWorker) => string;
  numeric?: boolean;
}

const COLUMNS: IColumn[] = [
  { key: 'name', label: 'Name', value: w => w.name },
  { key: 'address', label: 'Address', value: w => w.address },
  { key: 'nthreads', label: 'Threads', value: w => w.nthreads, numeric: true },
  { key: 'cpu', label: 'CPU', value: w => w.cpu, show: w => `${Math.round(w.cpu)}%`, numeric: true },
  { key: 'memory', label: 'Memory', value: w => w.managed + w.unmanaged, show: w => bytes(w.managed + w.unmanaged), numeric: true },
  { key: 'limit', label: 'Limit', value: w => w.memory_limit, show: w => (w.memory_limit ? bytes(w.memory_limit) : '∞'), numeric: true },
  { key: 'spilled', label: 'Spilled', value: w => w.spilled, show: w => bytes(w.spilled), numeric: true },
  { key: 'executing', label: 'Executing', value: w => w.executing, numeric: true },
  { key: 'processing', label: 'Processing', value: w => w.processing, numeric: true },
  { key: 'in_memory', label: 'In memory', value: w => w.in_memory, numeric: true },
  { key: 'status', label: 'Status', value: w => w.status }
];

export class WorkersPane extends XschedPane {
  constructor(cluster: string, clusterName: string) {
    super('workers', cluster, clusterName);
    this._head = h('tr', {});
    this._tbody = h('tbody', {});
    this.body.append(h('table', { class: 'xsched-WorkersTable' }, h('thead', {}, this._head), this._tbody));
    this._head.addEventListener('click', ev => {
      const th = (ev.target as HTMLElement).closest('th[data-sort]');
      if (th) {
        const key = th.getAttribute('data-sort') || 'name';
        this._descending = key === this._sortKey ? !this._descending : false;
        this._sortKey = key;
        this._render();
      }
    });
    this._renderHead();
  }

  clear(): void {
    this._workers = [];
    this._render();
  }

  receive(msg: ITelemetry): void {
    if (msg.workers) {
      this._workers = msg.workers;
      this._render();
    }
  }

  private _renderHead(): void {
    this._head.replaceChildren(
      ...COLUMNS.map(c =>
        h(
          'th',
          {
            'data-sort': c.key,
            class: c.numeric ? 'xsched-mod-numeric' : undefined,
            'aria-sort': c.key === this._sortKey ? (this._descending ? 'descending' : 'ascending') : 'none',
            title: `sort by ${c.label.toLowerCase()}`
          },
          c.label + (c.key === this._sortKey ? (this._descending ? ' ▼' : ' ▲') : '')
        )
      )
    );
  }

  private _render(): void {
    const heading = `${this._sortKey} ${this._descending}`;
    if (heading !== this._heading) {
      this._heading = heading;
      this._renderHead();
    }
    const col = COLUMNS.find(c => c.key === this._sortKey) || COLUMNS[0];
    const rows = [...this._workers].sort((a, b) => {
      const va = col.value(a);
      const vb = col.value(b);
      const d = typeof va === 'number' && typeof vb === 'number' ? va - vb : naturalCompare(String(va), String(vb));
      return (this._descending ? -d : d) || naturalCompare(a.name, b.name) || naturalCompare(a.address, b.address);
    });
    // rows kept per worker and cells written only when their text changes: rebuilding the
    // table each message made the browser restyle, lay out and shape every cell's text again
    const order = rows.map(w => {
      const tr = this._rows.row(w.address);
      if (tr.classList.contains('xsched-mod-paused') !== (w.status !== 'running')) {
        tr.classList.toggle('xsched-mod-paused');
      }
      COLUMNS.forEach((c, i) => setText(tr.children[i] as HTMLElement, c.show ? c.show(w) : String(c.value(w))));
      return tr;
    });
    keepInOrder(this._tbody, order);
    this._rows.sweep();
  }

  private _workers: ITelemetryWorker[] = [];
  private _rows = new KeyedRows(address =>
    h('tr', { 'data-worker-address': address },
      ...COLUMNS.map(c => h('td', { class: c.numeric ? 'xsched-mod-numeric' : undefined, 'data-column': c.key }))));
  private _heading = '';
  private _sortKey = 'name';
  private _descending = false;
  private _head: HTMLElement;
  private _tbody: HTMLElement;
}
