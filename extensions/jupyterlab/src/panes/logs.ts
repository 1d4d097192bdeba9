// Logs: the recent records of the scheduler's and each worker's `xsched` loggers, newest last,
// from the telemetry `logs` part (per process, the records numbered from the cursor the server
// keeps). A selector picks one process (or all of them), a search box filters the text.
// Bounded: the last KEEP records in all (the oldest go first); SHOWN of them drawn at most.
import { ITelemetry, LogRecord, XschedPane, h, naturalCompare } from './common';

/** records kept in the browser, across every process */
export const KEEP = 5000;
/** rows drawn at most (the newest of those that match) */
const SHOWN = 1000;

interface IEntry {
  source: string;
  number: number;
  level: string;
  message: string;
  /** lower-case text the filter searches */
  text: string;
}

export class LogsPane extends XschedPane {
  constructor(cluster: string, clusterName: string) {
    super('logs', cluster, clusterName);
    this._source = h('select', { class: 'jp-mod-styled xsched-LogsSource', 'aria-label': 'whose logs' }) as HTMLSelectElement;
    this._filter = h('input', {
      class: 'jp-mod-styled xsched-LogsFilter',
      type: 'search',
      placeholder: 'filter',
      'aria-label': 'show the records containing'
    }) as HTMLInputElement;
    this._count = h('span', { class: 'xsched-LogsCount' });
    this._list = h('div', { class: 'xsched-LogsList', role: 'log' });
    this.body.append(h('div', { class: 'xsched-LogsBar' }, this._source, this._filter, this._count), this._list);
    this._source.addEventListener('change', () => this._render(true));
    this._filter.addEventListener('input', () => this._render(true));
    this._options();
  }

  clear(): void {
    this._entries = [];
    this._seen.clear();
    this._names.clear();
    this._options();
    this._render(true);
  }

  receive(msg: ITelemetry): void {
    for (const w of msg.workers || []) {
      this._names.set(w.address, w.name);
    }
    if (!msg.logs) {
      return;
    }
    let added = 0;
    for (const [source, records] of Object.entries(msg.logs)) {
      const seen = this._seen.get(source) ?? -1;
      let last = seen;
      for (const [number, level, message] of records as LogRecord[]) {
        if (number <= seen) {
          continue; // held already (sent again after a reset)
        }
        this._entries.push({ source, number, level, message, text: `${source} ${level} ${message}`.toLowerCase() });
        last = Math.max(last, number);
        added++;
      }
      this._seen.set(source, last);
    }
    const sources = Object.keys(msg.logs);
    const gone = [...this._seen.keys()].filter(s => !sources.includes(s));
    if (gone.length) { // workers that left: their records go with them
      this._entries = this._entries.filter(e => !gone.includes(e.source));
      gone.forEach(s => this._seen.delete(s));
      added++;
    }
    if (this._entries.length > KEEP) {
      this._entries.splice(0, this._entries.length - KEEP);
    }
    if (this._options() || added) {
      this._render(false);
    }
  }

  /** The selector's options: all, the scheduler, each worker (natural order); whether they changed. */
  private _options(): boolean {
    const workers = [...this._seen.keys()].filter(s => s !== 'scheduler');
    const label = (a: string) => this._names.get(a) || a;
    workers.sort((a, b) => naturalCompare(label(a), label(b)) || naturalCompare(a, b));
    const wanted = ['', 'scheduler', ...workers];
    const have = Array.from(this._source.querySelectorAll('option'), o => (o as HTMLOptionElement).value);
    if (have.length === wanted.length && have.every((v, i) => v === wanted[i])) {
      return false;
    }
    const chosen = this._source.value;
    this._source.replaceChildren(
      ...wanted.map(v =>
        h('option', { value: v }, v === '' ? 'all processes' : v === 'scheduler' ? 'scheduler' :
          label(v) === v ? v : `${label(v)} (${v})`)
      )
    );
    this._source.value = wanted.includes(chosen) ? chosen : '';
    return true;
  }

  /** Draw the records that match (newest last), following the newest unless scrolled up. */
  private _render(force: boolean): void {
    const list = this._list;
    const follow = force || list.scrollTop + list.clientHeight >= list.scrollHeight - 8;
    const source = this._source.value;
    const needle = this._filter.value.trim().toLowerCase();
    const matching = this._entries.filter(e => (!source || e.source === source) && (!needle || e.text.includes(needle)));
    const shown = matching.slice(-SHOWN);
    list.replaceChildren(
      ...shown.map(e =>
        h(
          'div',
          { class: 'xsched-LogRow', 'data-source': e.source, 'data-level': e.level },
          h('span', { class: 'xsched-LogSource', title: e.source }, e.source === 'scheduler' ? 'scheduler' : this._names.get(e.source) || e.source),
          h('span', { class: 'xsched-LogLevel' }, e.level),
          h('span', { class: 'xsched-LogMessage' }, e.message)
        )
      )
    );
    if (!shown.length) {
      list.append(h('div', { class: 'xsched-Empty' }, this._entries.length ? 'No record matches.' :
        'No records yet: the xsched loggers of the scheduler and the workers log warnings and above.'));
    }
    this._count.textContent = `${matching.length} of ${this._entries.length} records` +
      (matching.length > SHOWN ? ` (the newest ${SHOWN} shown)` : '');
    if (follow) {
      list.scrollTop = list.scrollHeight;
    }
  }

  private _entries: IEntry[] = [];
  /** source -> the number of its newest record held */
  private _seen = new Map<string, number>();
  private _names = new Map<string, string>();
  private _source: HTMLSelectElement;
  private _filter: HTMLInputElement;
  private _count: HTMLElement;
  private _list: HTMLElement;
}
