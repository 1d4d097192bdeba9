// Story: a task key's transitions on the scheduler (time, from-state, to-state, worker,
// stimulus), asked on demand: the key typed in the box (Enter or "Show"), then again at most
// every REFRESH seconds while telemetry comes, so a running task's story grows as it runs.
import { IStory, IStoryRow, ITelemetry, StoryFetcher, XschedPane, h } from './common';

/** seconds between two asks for the story shown */
const REFRESH = 2;

export class StoryPane extends XschedPane {
  constructor(cluster: string, clusterName: string, private fetchStory: StoryFetcher) {
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
    this.body.append(form, this._status, this._now, h('div', { class: 'xsched-StoryBox' }, this._table));
  }

  /** the key shown ('' for none) */
  key = '';

  clear(): void {
    this.key = '';
    this._tbody.replaceChildren();
    this._table.style.display = 'none';
    this._now.style.display = 'none';
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
            typeof r.time === 'number' ? timeOfDay(r.time) : '–'),
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
  private _table: HTMLElement;
  private _tbody: HTMLElement;
  private _busy = false;
  private _asked = 0;
}

/** "14:03:07.123" */
function timeOfDay(t: number): string {
  const d = new Date(t * 1000);
  return `${d.toLocaleTimeString([], { hour12: false })}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}
