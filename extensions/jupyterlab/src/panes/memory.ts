// Worker memory: managed (solid), unmanaged (striped) and spilled (warning colour) against each
// worker's limit, a row per worker in natural order.
import {
  ITelemetry, KeyedRows, MEMORY_SEGMENTS, XschedPane, byWorkerOrder, bytes, h, keepInOrder, setAttr, setMemoryBar, setText,
  stackedBar
} from './common';

export class WorkerMemoryPane extends XschedPane {
  constructor(cluster: string, clusterName: string) {
    super('worker-memory', cluster, clusterName);
    this._list = h('div', { class: 'xsched-MemoryList' });
    this._legend = h(
      'div',
      { class: 'xsched-MemoryLegend' },
      h('span', { class: 'xsched-Swatch xsched-Bar-managed' }), 'managed ',
      h('span', { class: 'xsched-Swatch xsched-Bar-unmanaged' }), 'unmanaged ',
      h('span', { class: 'xsched-Swatch xsched-Bar-spilled' }), 'spilled (on disk)'
    );
    this.body.append(this._legend, this._list);
  }

  clear(): void {
    this._list.replaceChildren();
    this._rows.clear();
  }

  receive(msg: ITelemetry): void {
    if (!msg.workers) {
      return;
    }
    const workers = [...msg.workers].sort(byWorkerOrder);
    const order: HTMLElement[] = [];
    for (const w of workers) {
      const row = this._rows.row(w.address);
      const q = (s: string) => row.querySelector(s) as HTMLElement;
      // (written only where they changed: a node written again is laid out again)
      const name = q('.xsched-MemoryName');
      setText(name, w.name);
      setAttr(name, 'title', w.address);
      setMemoryBar(q('.xsched-MemoryBar'), w);
      setText(q('.xsched-MemoryLabel'),
        `${bytes(w.managed + w.unmanaged)} / ${w.memory_limit ? bytes(w.memory_limit) : '∞'}` +
        (w.spilled ? ` +${bytes(w.spilled)} spilled` : ''));
      setAttr(row, 'data-managed', String(w.managed));
      setAttr(row, 'data-limit', String(w.memory_limit));
      order.push(row);
    }
    keepInOrder(this._list, order);
    this._rows.sweep();
  }

  private _rows = new KeyedRows(address =>
    h(
      'div',
      { class: 'xsched-MemoryRow', 'data-worker-address': address },
      h('span', { class: 'xsched-MemoryName' }),
      stackedBar('xsched-MemoryBar', MEMORY_SEGMENTS),
      h('span', { class: 'xsched-MemoryLabel' })
    )
  );
  private _list: HTMLElement;
  private _legend: HTMLElement;
}
