// Worker memory: managed (solid), unmanaged (striped) and spilled (warning colour) against each
// worker's limit, a row per worker in natural order.
import { ITelemetry, KeyedRows, XschedPane, byWorkerOrder, bytes, h, keepInOrder, pct, setAttr, setText } from './common';

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
      const limit = w.memory_limit || Math.max(w.rss, w.managed + w.unmanaged + w.spilled) || 1;
      setAttr(q('.xsched-Bar-managed'), 'style.width', pct(w.managed, limit));
      setAttr(q('.xsched-Bar-unmanaged'), 'style.width', pct(w.unmanaged, limit));
      setAttr(q('.xsched-Bar-spilled'), 'style.width', pct(w.spilled, limit));
      setAttr(q('.xsched-MemoryBar'), 'title',
        `managed ${bytes(w.managed)}, unmanaged ${bytes(w.unmanaged)}, spilled ${bytes(w.spilled)}, ` +
        `limit ${w.memory_limit ? bytes(w.memory_limit) : 'none'}`);
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
      h(
        'div',
        { class: 'xsched-Bar xsched-MemoryBar' },
        h('div', { class: 'xsched-Bar-managed' }),
        h('div', { class: 'xsched-Bar-unmanaged' }),
        h('div', { class: 'xsched-Bar-spilled' })
      ),
      h('span', { class: 'xsched-MemoryLabel' })
    )
  );
  private _list: HTMLElement;
  private _legend: HTMLElement;
}
