// Progress per task group: done / processing / erred against the group's total (waiting is
// the rest of the track). Groups with nothing left to run compact together at the bottom.
import { ITelemetry, ITelemetryGroup, KeyedRows, XschedPane, h, keepInOrder, setAttr, setBar, setText, stackedBar } from './common';

export class ProgressPane extends XschedPane {
  constructor(cluster: string, clusterName: string) {
    super('progress', cluster, clusterName);
    this._active = h('div', { class: 'xsched-ProgressActive' });
    this._finished = h('div', { class: 'xsched-ProgressFinished' });
    this._empty = h('div', { class: 'xsched-Empty' }, 'No tasks yet.');
    this.body.append(this._empty, this._active, this._finished);
  }

  clear(): void {
    this._active.replaceChildren();
    this._finished.replaceChildren();
    this._rows.clear();
    this._empty.style.display = '';
  }

  receive(msg: ITelemetry): void {
    if (!msg.groups) {
      return;
    }
    this._empty.style.display = msg.groups.length ? 'none' : '';
    const active: HTMLElement[] = [];
    const finished: HTMLElement[] = [];
    for (const g of msg.groups) {
      const done = g.waiting === 0 && g.processing === 0 && g.total > 0;
      const row = this._row(g);
      if (row.classList.contains('xsched-mod-finished') !== done) {
        row.classList.toggle('xsched-mod-finished');
      }
      (done ? finished : active).push(row); // the server's order: first seen first
    }
    // (rows moved only when out of place: a node moved is laid out again)
    keepInOrder(this._active, active);
    keepInOrder(this._finished, finished);
    this._rows.sweep();
  }

  private _row(g: ITelemetryGroup): HTMLElement {
    const row = this._rows.row(g.name);
    const q = (s: string) => row.querySelector(s) as HTMLElement;
    setAttr(row, 'data-done', String(g.done));
    setAttr(row, 'data-processing', String(g.processing));
    setAttr(row, 'data-erred', String(g.erred));
    setAttr(row, 'data-waiting', String(g.waiting));
    setAttr(row, 'data-total', String(g.total));
    setBar(q('.xsched-ProgressBar'), { done: g.done, processing: g.processing, erred: g.erred }, g.total,
      `${g.name}: ${g.done} done, ${g.processing} processing, ${g.erred} erred, ${g.waiting} waiting, of ${g.total}`);
    setText(q('.xsched-ProgressCount'), `${g.done} / ${g.total}` + (g.erred ? ` · ${g.erred} erred` : ''));
    return row;
  }

  private _rows = new KeyedRows(name =>
    h(
      'div',
      { class: 'xsched-ProgressRow', 'data-group': name },
      h('span', { class: 'xsched-ProgressName', title: name }, name),
      stackedBar('xsched-ProgressBar', ['done', 'processing', 'erred']),
      h('span', { class: 'xsched-ProgressCount' })
    )
  );
  private _active: HTMLElement;
  private _finished: HTMLElement;
  private _empty: HTMLElement;
}
