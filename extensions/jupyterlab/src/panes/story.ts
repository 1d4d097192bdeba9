// Story: a task key's transitions on the scheduler (time, from-state, to-state, worker,
// stimulus), asked on demand: the key typed in the box (Enter or "Show"), then again at most
// every REFRESH seconds while telemetry comes, so a running task's story grows as it runs.
// In JupyterLab, a key held in memory offers a console on a worker holding it, with the value
// bound to `value` there; the page, which has no kernels, shows the two lines that do the same
// from a notebook connected to the cluster (the worker's kernel through %remote).
import { IStory, IStoryRow, ITelemetry, StoryFetcher, XschedPane, h, timeOfDay } from './common';

/** Open a console on `worker` of `cluster` with the value of `key` bound (the lab gives one). */
export type KeyConsole = (cluster: string, worker: string, key: string) => Promise<void>;

/** seconds between two asks for the story shown */
const REFRESH = 2;

/** Where no console can open (the page): how a notebook connected to the cluster reaches the
 * value of `key` on `worker`, in the worker's own kernel. */
function remoteSnippet(key: string, worker: string): HTMLElement {
  const w = JSON.stringify(worker);
  const code = `infos = client.start_ipython_workers(workers=[${w}])\n` +
    `%remote infos[${w}] value = worker.data[${JSON.stringify(key)}]`;
  return h('div', { class: 'xsched-StorySnippet', 'data-worker': worker },
    h('div', {}, `${key} is in memory on ${worker}. In a notebook with a Client on this cluster, these lines bind it to ` +
      '"value" in that worker\u2019s kernel (then %remote infos[...] <code> runs there):'),
    h('pre', {}, code));
}

export class StoryPane extends XschedPane {
  constructor(cluster: string, clusterName: string, private fetchStory: StoryFetcher,
    private keyConsole: KeyConsole | null = null) {
    super('story', cluster, clusterName);
    this._key = h('input', {
      class: 'jp-mod-styled xsched-StoryKey',
      type: 'text',
      placeholder: 'a task key, e.g. inc-3f2a…',
      'aria-label': 'task key',
      spellcheck: 'false'
    }) as HTMLInputElement;
    const show = h('button', { class: 'jp-mod-styled xsched-Button', type: 'submit' }, 'Show');
    const form = h('form', { class: 'xsched-StoryBar' }, this._key, show);
    form.addEventListener('submit', ev => {
      ev.preventDefault();
      void this.showKey(this._key.value.trim());
    });
    this._status = h('div', { class: 'xsched-StoryStatus', role: 'status' }, 'Type a task key to see its transitions.');
    this._tbody = h('tbody', {});
    this._table = h(
      'table',
      { class: 'xsched-Story xsched-StoryTable' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          h('th', {}, 'time'),
          h('th', {}, 'from'),
          h('th', {}, 'to'),
          h('th', {}, 'worker'),
          h('th', { title: 'the event that caused it' }, 'stimulus')
        )
      ),
      this._tbody
    );
    this._table.style.display = 'none';
    this._now = h('div', { class: 'xsched-StoryNow', role: 'status' });
    this._now.style.display = 'none';
    this._consoles = h('div', { class: 'xsched-Actions xsched-StoryConsoles' });
    this._consoles.addEventListener('click', ev => {
      const el = (ev.target as HTMLElement).closest('[data-action="key-console"]');
      const worker = el?.getAttribute('data-worker');
      if (worker && this.keyConsole && this.key) {
        void this.keyConsole(this.cluster, worker, this.key);
      }
    });
    this.body.append(form, this._status, this._now, this._consoles, h('div', { class: 'xsched-StoryBox' }, this._table));
  }

  /** the key shown ('' for none) */
  key = '';

  clear(): void {
    this.key = '';
    this._tbody.replaceChildren();
    this._table.style.display = 'none';
    this._now.style.display = 'none';
    this._consoles.replaceChildren();
    this._status.textContent = 'Type a task key to see its transitions.';
  }

  receive(_msg: ITelemetry): void {
    if (this.key && !this._busy && Date.now() - this._asked > REFRESH * 1000 && this.isAttached) {
      void this.showKey(this.key, true);
    }
  }

  /** Ask for the story of `key` and show it. */
  async showKey(key: string, quiet = false): Promise<void> {
    if (!key) {
      this.clear();
      return;
    }
    if (this._key.value.trim() !== key) {
      this._key.value = key;
    }
    this.key = key;
    this._busy = true;
    this._asked = Date.now();
    if (!quiet) {
      this._status.textContent = `Asking for the story of ${key}…`;
    }
    try {
      const reply = await this.fetchStory(this.cluster, key);
      if (this.key === key) {
        this._render(key, reply);
      }
    } catch (e) {
      if (this.key === key) {
        this._status.textContent = `No story of ${key}: ${e instanceof Error ? e.message : String(e)}`;
      }
    } finally {
      this._busy = false;
    }
  }

  private _render(key: string, reply: IStory): void {
    const rows: IStoryRow[] = reply.story;
    this._now.textContent = reply.now ? `Now: ${reply.now}` : '';
    this._now.style.display = reply.now ? '' : 'none';
    const holders = reply.holders || [];
    const shown = `${key} ${holders.join(' ')}`;
    if (shown !== this._holders) { // (redrawn only when they change: a click may be on its way, a snippet selected)
      this._holders = shown;
      this._consoles.replaceChildren(
        ...(this.keyConsole
          ? holders.map(w =>
            h('button', {
              class: 'jp-mod-styled xsched-Button', 'data-action': 'key-console', 'data-worker': w,
              title: `Open a console on ${w}, where ${key} is in memory, with its value bound to "value"`
            }, `Console with its value on ${w.replace(/^tcp:\/\//, '')}`))
          : holders.slice(0, 1).map(w => remoteSnippet(key, w)))
      );
    }
    this._table.style.display = rows.length ? '' : 'none';
    this._status.textContent = rows.length
      ? `${key}: ${rows.length} transition${rows.length === 1 ? '' : 's'}, now ${rows[rows.length - 1].finish}`
      : `No transitions of ${key}: the scheduler does not know this key (or forgot it).`;
    this._tbody.replaceChildren(
      ...rows.map(r =>
        h(
          'tr',
          { 'data-state': r.finish, class: `xsched-state-${r.finish}` },
          h('td', { class: 'xsched-StoryTime', title: r.time ? new Date(r.time * 1000).toISOString() : 'before the scheduler was first watched' },
            typeof r.time === 'number' ? timeOfDay(r.time, true) : '–'),
          h('td', {}, r.start),
          h('td', { class: 'xsched-StoryTransition' }, r.finish),
          h('td', { class: 'xsched-StoryWorker', title: r.worker || '' }, r.worker || ''),
          h('td', { class: 'xsched-StoryStimulus', title: r.stimulus_id || '' }, r.stimulus_id || '')
        )
      )
    );
  }

  private _key: HTMLInputElement;
  private _status: HTMLElement;
  private _now: HTMLElement;
  private _consoles: HTMLElement;
  private _holders = '';
  private _table: HTMLElement;
  private _tbody: HTMLElement;
  private _busy = false;
  private _asked = 0;
}
