// The dashboard page a scheduler serves (xsched/dashboard/server.py): the main-area panes of the
// lab extension (the same classes, the same DOM ids and attributes), outside JupyterLab.
// Bundled for the browser by build_dashboard.mjs into xsched/dashboard/static/.
//
//   page load --> panes attached to a grid; the theme from prefers-color-scheme (--jp-* variables
//                 in style/standalone.css, data-jp-theme-light on <body> for the canvas)
//   every interval --GET api/telemetry?parts=...&since=N&memory_since={..}&logs_since={..}&interval=S-->
//                  the scheduler <--{time, task_stream, workers, groups, memory, logs, profile, their cursors,
//                  interval (granted)}-- each pane's receive(); the cursors stay here
//   a key typed in the story pane --GET api/story?key=K--> {key, story: [...]}
//   Interrupt on a running task in the call stacks --POST api/interrupt {key}--> {key, interrupted}
//   Reset in the profile --POST api/profile-reset {}--> {profile} (the scheduler's profile from now)
//   a group clicked in the graph pane --GET api/group?name=G--> {group, total, keys: [...]};
//                  a key clicked there, or a run in the task stream, is shown in the story pane
//   no answer (refused connection) --> "went away", panes greyed; retried slowly, and a
//                  scheduler back at this address starts the panes afresh
import '@lumino/widgets/style/widget.css';
import '../style/index.css';
import '../style/standalone.css';

import { Widget } from '@lumino/widgets';

import { IGroupKeysReply, IStory, IStoryRow, ITelemetry, PANE_TITLES, PaneKind, XschedPane, h, timeOfDay } from './panes/common';
import { GraphPane } from './panes/graph';
import { LogsPane } from './panes/logs';
import { WorkerMemoryPane } from './panes/memory';
import { ProfilePane } from './panes/profile';
import { ProgressPane } from './panes/progress';
import { StacksPane } from './panes/stacks';
import { StoryPane } from './panes/story';
import { TaskStreamPane } from './panes/taskstream';
import { TimelinePane } from './panes/timeline';
import { WorkersPane } from './panes/workers';

/** the telemetry each poll asks for: what the panes draw */
const PARTS = 'task-stream,workers,groups,memory,logs,profile,stacks';
/** seconds a poll may take before it counts as unanswered */
const REQUEST_TIMEOUT = 10;
/** seconds between two tries once the scheduler went away */
const RETRY = 2;

type State = 'connecting' | 'live' | 'gone' | 'refused' | 'error';

/** The page: a header saying where and how live, and the panes in a grid. */
export class Dashboard {
  constructor(readonly root: HTMLElement) {
    this.address = root.dataset.scheduler || location.host;
    this.name = root.dataset.name || this.address;
    this.interval = Number(root.dataset.interval) || 0.5;
    this._status = h('span', { class: 'xsched-DashboardStatus', role: 'status', 'data-state': 'connecting' },
      'connecting…');
    const header = h(
      'header',
      { class: 'xsched-DashboardHeader' },
      h('span', { class: 'xsched-DashboardTitle' }, 'xsched'),
      h('span', { class: 'xsched-DashboardName', title: this.address }, this.name),
      this.name !== this.address ? h('code', { class: 'xsched-DashboardAddress' }, this.address) : null,
      this._status
    );
    const grid = h('main', { class: 'xsched-DashboardGrid' });
    root.replaceChildren(header, grid);
    const make: { [kind in PaneKind]: () => XschedPane } = {
      'task-stream': () => new TaskStreamPane(this.address, this.name, (_cluster, key) => this.showKey(key)),
      progress: () => new ProgressPane(this.address, this.name),
      'worker-memory': () => new WorkerMemoryPane(this.address, this.name),
      workers: () => new WorkersPane(this.address, this.name),
      timeline: () => new TimelinePane(this.address, this.name),
      logs: () => new LogsPane(this.address, this.name),
      story: () => new StoryPane(this.address, this.name, (_cluster, key) => this.story(key)),
      profile: () => new ProfilePane(this.address, this.name, () => this.resetProfile()),
      graph: () => new GraphPane(this.address, this.name, (_cluster, group) => this.group(group),
        (_cluster, key) => this.showKey(key)),
      'call-stack': () => new StacksPane(this.address, this.name, (_cluster, key) => this.interrupt(key))
    };
    for (const kind of Object.keys(make) as PaneKind[]) {
      const host = h('div', { class: 'xsched-DashboardHost' });
      grid.append(h('section', { class: 'xsched-DashboardCell', 'data-pane': kind },
        h('h2', { class: 'xsched-DashboardHeading' }, PANE_TITLES[kind]), host));
      const pane = make[kind]();
      Widget.attach(pane, host);
      this.panes.push(pane);
    }
    // the canvas follows its box (no Lumino layout around it to send resize messages)
    for (const pane of this.panes) {
      if (pane instanceof TaskStreamPane || pane instanceof ProfilePane) {
        new ResizeObserver(() => pane.schedule()).observe(pane.node);
      }
    }
  }

  readonly address: string;
  readonly name: string;
  /** seconds between polls: asked with ?interval= on the page, granted by the server */
  interval: number;
  readonly panes: XschedPane[] = [];
  /** the task-stream cursor: runs numbered from here on are new (null: whatever is kept) */
  since: number | null = null;
  /** the cursor of the workers' transfers and spill I/O, as `since` */
  activitySince: number | null = null;
  /** worker address -> the time of its newest memory sample held */
  memorySince: { [address: string]: number } = {};
  /** "scheduler" or a worker address -> the number of the next log record wanted */
  logsSince: { [source: string]: number } = {};
  state: State = 'connecting';

  /** Poll until refused: one request at a time, the next one `interval` after an answer. */
  async run(): Promise<void> {
    for (;;) {
      if (document.hidden) {
        await new Promise<void>(resolve =>
          document.addEventListener('visibilitychange', () => resolve(), { once: true }));
        continue;
      }
      await this.poll();
      if (this.state === 'refused') {
        return;
      }
      const wait = this.state === 'live' ? this.interval : Math.max(this.interval, RETRY);
      await new Promise(resolve => setTimeout(resolve, wait * 1000));
    }
  }

  /** One request to the scheduler, its answer given to every pane. */
  async poll(): Promise<void> {
    const query = new URLSearchParams({ parts: PARTS, interval: String(this.interval) });
    if (this.since !== null) {
      query.set('since', String(this.since));
    }
    if (this.activitySince !== null) {
      query.set('activity_since', String(this.activitySince));
    }
    if (Object.keys(this.memorySince).length) {
      query.set('memory_since', JSON.stringify(this.memorySince));
    }
    if (Object.keys(this.logsSince).length) {
      query.set('logs_since', JSON.stringify(this.logsSince));
    }
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), REQUEST_TIMEOUT * 1000);
    let reply: Response;
    try {
      reply = await fetch(`api/telemetry?${query}`, { credentials: 'same-origin', cache: 'no-store', signal: abort.signal });
    } catch (e) {
      if (abort.signal.aborted) {
        this._set('error', `no answer from the scheduler within ${REQUEST_TIMEOUT} s; trying again`);
      } else {
        this._gone();
      }
      return;
    } finally {
      clearTimeout(timer);
    }
    if (reply.status === 403) {
      this._set('refused', 'the scheduler refused this page: open the link client.dashboard_link gives ' +
        '(a scheduler restarted with another secret has another token)');
      this.panes.forEach(p => p.setGone(true));
      return;
    }
    if (reply.status === 503) { // closing, or no telemetry extension: said by the scheduler
      const why = (await reply.text()).replace(/^503:\s*/, '').trim();
      if (why.includes('closing')) {
        this._gone();
      } else {
        this._set('error', why);
      }
      return;
    }
    if (!reply.ok) {
      this._set('error', (await reply.text()).trim() || `HTTP ${reply.status}`);
      return;
    }
    const msg = (await reply.json()) as ITelemetry & { interval?: number };
    if (this.state === 'gone') { // back: perhaps another scheduler at this address; start afresh
      this.panes.forEach(p => p.clear());
    }
    if (typeof msg.interval === 'number' && msg.interval > 0) {
      this.interval = msg.interval;
    }
    if (msg.task_stream) {
      this.since = msg.task_stream.index;
    }
    if (msg.activity) {
      this.activitySince = msg.activity.index;
    }
    if (msg.memory_since) {
      this.memorySince = {};
      for (const [address, t] of Object.entries(msg.memory_since)) {
        if (typeof t === 'number') {
          this.memorySince[address] = t;
        }
      }
    }
    if (msg.logs_since) {
      this.logsSince = { ...msg.logs_since };
    }
    const telemetry: ITelemetry = { ...msg, type: 'telemetry', cluster: this.address };
    for (const pane of this.panes) {
      pane.setGone(false);
      pane.setError(null);
      pane.receive(telemetry);
    }
    this._set('live', `live · ${timeOfDay(msg.time || Date.now() / 1000)} · every ${this.interval} s`);
  }

  /** Interrupt a running task where it runs (the call stacks' button): POST api/interrupt. */
  async interrupt(key: string): Promise<void> {
    try {
      await this._act('api/interrupt', { key }, `interrupt ${key}`);
    } catch {
      // said on the page
    }
  }

  /** Start the profile again (the profile's Reset button): POST api/profile-reset; the new
   * profile's start. */
  async resetProfile(): Promise<number> {
    return (await this._act<{ profile: { since: number } }>('api/profile-reset', {}, 'reset the profile')).profile.since;
  }

  /** A request that changes something: POST with a JSON body (the server takes nothing else);
   * the reply's JSON. A failure is said on the page ("could not <what>") and raised. */
  private async _act<T>(path: string, body: unknown, what: string): Promise<T> {
    let reply: Response;
    try {
      reply = await fetch(path, {
        method: 'POST', credentials: 'same-origin', cache: 'no-store',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body)
      });
    } catch (e) {
      this._set('error', `could not ${what}: ${e instanceof Error ? e.message : String(e)}`);
      throw e;
    }
    if (!reply.ok) {
      const why = (await reply.text()).trim() || `HTTP ${reply.status}`;
      this._set('error', `could not ${what}: ${why}`);
      throw new Error(why);
    }
    return (await reply.json()) as T;
  }

  /** The keys of a task group, from the scheduler's group API. */
  async group(name: string): Promise<IGroupKeysReply> {
    const reply = await fetch(`api/group?${new URLSearchParams({ name })}`, { credentials: 'same-origin', cache: 'no-store' });
    if (!reply.ok) {
      throw new Error((await reply.text()).trim() || `HTTP ${reply.status}`);
    }
    return (await reply.json()) as IGroupKeysReply;
  }

  /** Show `key` in the page's story pane, scrolled into view. */
  showKey(key: string): void {
    const story = this.panes.find(p => p instanceof StoryPane) as StoryPane | undefined;
    if (story) {
      story.node.scrollIntoView({ block: 'nearest' });
      void story.showKey(key);
    }
  }

  /** The story of a task key, from the scheduler's story API. */
  async story(key: string): Promise<IStory> {
    const reply = await fetch(`api/story?${new URLSearchParams({ key })}`, { credentials: 'same-origin', cache: 'no-store' });
    if (!reply.ok) {
      throw new Error((await reply.text()).trim() || `HTTP ${reply.status}`);
    }
    const body = (await reply.json()) as { story: IStoryRow[]; now?: string; holders?: string[] };
    return { story: body.story, now: body.now, holders: body.holders };
  }

  private _gone(): void {
    if (this.state !== 'gone') {
      this.panes.forEach(p => p.setGone(true));
    }
    this.since = null; // whoever answers next starts from the runs (samples, records) it keeps
    this.activitySince = null;
    this.memorySince = {};
    this.logsSince = {};
    this._set('gone', `the scheduler at ${this.address} went away: it is no longer running ` +
      `(this page tries again every ${Math.max(this.interval, RETRY)} s)`);
  }

  private _set(state: State, text: string): void {
    this.state = state;
    this._status.setAttribute('data-state', state);
    this._status.textContent = text;
    document.title = `${state === 'gone' ? '(gone) ' : ''}xsched dashboard · ${this.name}`;
  }

  private _status: HTMLElement;
}

/** The theme from the browser's colour scheme: the CSS variables follow it on their own; the
 * task stream's canvas reads data-jp-theme-light, as it does in JupyterLab. */
function followColourScheme(): void {
  const dark = window.matchMedia('(prefers-color-scheme: dark)');
  const apply = () => {
    document.body.setAttribute('data-jp-theme-light', dark.matches ? 'false' : 'true');
    document.body.setAttribute('data-jp-theme-name', dark.matches ? 'xsched dark' : 'xsched light');
  };
  apply();
  dark.addEventListener('change', apply);
}

/** The token came in the address (?token=); the cookie carries it from now on: out of the
 * address bar, the history and what a screenshot shows. */
function forgetTokenInAddress(): void {
  const url = new URL(location.href);
  if (url.searchParams.has('token')) {
    url.searchParams.delete('token');
    history.replaceState(history.state, '', url.toString());
  }
}

function main(): void {
  followColourScheme();
  forgetTokenInAddress();
  const dashboard = new Dashboard(document.body);
  (window as any).xschedDashboard = dashboard; // for a console (and tests): the panes, the cursor
  void dashboard.run();
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', main, { once: true });
} else {
  main();
}
