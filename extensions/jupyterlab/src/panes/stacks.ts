// Call stacks: where each running task is now, live. The telemetry's `stacks` part carries,
// per worker running tasks, the last answer it gave to `call-stack` (asked about once a
// second while the pane is open): per task key, its frames outermost first, each a
// traceback-style "File ..., line ..., in ..." line and its source line. Shown as a block per
// task (worker, key, how old the answer is), the innermost frame highlighted; a filter box
// keeps the tasks whose key or frames contain its text. In JupyterLab each task has an
// "Interrupt" button (client.interrupt: TaskInterrupted raised in its thread).
import { ITelemetry, XschedPane, h, naturalCompare } from './common';

/** Interrupt task `key` of `cluster` where it runs (the lab gives one; the page does not). */
export type TaskInterrupter = (cluster: string, key: string) => Promise<void>;

export class StacksPane extends XschedPane {
  constructor(cluster: string, clusterName: string, private interrupter: TaskInterrupter | null = null) {
    super('call-stack', cluster, clusterName);
    this._filter = h('input', {
      class: 'jp-mod-styled xsched-StacksFilter',
      type: 'search',
      placeholder: 'filter: a key, a function, a file…',
      'aria-label': 'filter the call stacks'
    }) as HTMLInputElement;
    this._filter.addEventListener('input', () => this._render());
    this._status = h('div', { class: 'xsched-StacksStatus', role: 'status' }, 'No task running.');
    this._list = h('div', { class: 'xsched-StacksList', 'data-tasks': 0 });
    this._list.addEventListener('click', ev => {
      const el = (ev.target as HTMLElement).closest('[data-action="interrupt"]') as HTMLButtonElement | null;
      const key = el?.getAttribute('data-key');
      if (el && key && this.interrupter) {
        el.disabled = true;
        el.textContent = 'Interrupting…';
        void this.interrupter(this.cluster, key);
      }
    });
    this.body.append(this._filter, this._status, this._list);
  }

  clear(): void {
    this._stacks = {};
    this._seen = '';
    this._render();
  }

  receive(msg: ITelemetry): void {
    if (!msg.stacks) {
      return;
    }
    this._now = msg.time || Date.now() / 1000;
    const seen = JSON.stringify(msg.stacks);
    if (seen === this._seen) {
      this._ages(); // (the same stacks as last time: only how long ago they were taken moves)
      return;
    }
    this._seen = seen;
    this._stacks = msg.stacks;
    this._render();
  }

  /** How long ago each worker's stacks were taken, in the blocks shown. */
  private _ages(): void {
    for (const el of Array.from(this._list.querySelectorAll<HTMLElement>('.xsched-StackWhere'))) {
      const worker = el.closest('[data-worker]')?.getAttribute('data-worker') || '';
      const at = this._stacks[worker]?.time;
      if (at !== undefined) {
        const text = this._where(worker, at);
        if (el.textContent !== text) {
          el.textContent = text;
        }
      }
    }
  }

  private _where(worker: string, time: number): string {
    const age = Math.max(this._now - time, 0);
    return `${worker.replace(/^tcp:\/\//, '')} · ${age < 1 ? 'now' : `${age.toFixed(0)} s ago`}`;
  }

  private _render(): void {
    const needle = this._filter.value.trim().toLowerCase();
    const blocks: HTMLElement[] = [];
    let total = 0;
    const workers = Object.keys(this._stacks).sort(naturalCompare);
    for (const worker of workers) {
      const { time, tasks } = this._stacks[worker];
      for (const key of Object.keys(tasks).sort(naturalCompare)) {
        total++;
        const frames = tasks[key];
        if (needle && !key.toLowerCase().includes(needle) && !frames.some(f => f.toLowerCase().includes(needle))) {
          continue;
        }
        blocks.push(
          h(
            'section',
            { class: 'xsched-StackBlock', 'data-key': key, 'data-worker': worker, 'data-frames': frames.length },
            h(
              'div',
              { class: 'xsched-StackHead' },
              h('span', { class: 'xsched-StackKey', title: key }, key),
              h('span', { class: 'xsched-StackWhere', title: worker }, this._where(worker, time)),
              this.interrupter
                ? h('button', { class: 'jp-mod-styled xsched-Button', 'data-action': 'interrupt', 'data-key': key,
                  title: `Interrupt ${key}: TaskInterrupted is raised in its thread, and it fails with it` }, 'Interrupt')
                : null
            ),
            h(
              'pre',
              { class: 'xsched-StackFrames' },
              ...frames.map((f, i) =>
                h('span', { class: i === frames.length - 1 ? 'xsched-StackFrame xsched-mod-innermost' : 'xsched-StackFrame' }, f))
            )
          )
        );
      }
    }
    this._list.replaceChildren(...blocks);
    this._list.setAttribute('data-tasks', String(total));
    this._status.textContent = total
      ? `${total} task${total === 1 ? '' : 's'} running on ${workers.length} worker${workers.length === 1 ? '' : 's'}` +
        (blocks.length < total ? ` (${blocks.length} shown)` : '')
      : 'No task running.';
  }

  private _stacks: { [worker: string]: { time: number; tasks: { [key: string]: string[] } } } = {};
  private _seen = ''; // (the stacks last rendered, as JSON)
  private _now = 0;
  private _filter: HTMLInputElement;
  private _status: HTMLElement;
  private _list: HTMLElement;
}
