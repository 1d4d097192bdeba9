// The main-area panes: commands, the palette, the layout restorer, and one watch per cluster
// on the panel's websocket ({"type": "watch"} with the panes open; {"type": "telemetry"} back).
import { ILayoutRestorer, JupyterFrontEnd } from '@jupyterlab/application';
import { ICommandPalette, WidgetTracker, showErrorMessage } from '@jupyterlab/apputils';

import { IClusterSummary, IStoryEntry, Updates, post, request } from '../api';
import { IGroupKeysReply, ITelemetry, KeyOpener, PANE_TITLES, PaneKind, XschedPane } from './common';
import { GraphPane } from './graph';
import { LogsPane } from './logs';
import { WorkerMemoryPane } from './memory';
import { ProfilePane } from './profile';
import { ProgressPane } from './progress';
import { StacksPane, TaskInterrupter } from './stacks';
import { KeyConsole, StoryPane } from './story';
import { TaskStreamPane } from './taskstream';
import { TimelinePane } from './timeline';
import { WorkersPane } from './workers';

export type { PaneKind } from './common';
export { XschedPane } from './common';

export const PANE_KINDS: PaneKind[] = [
  'task-stream', 'progress', 'worker-memory', 'workers', 'timeline', 'logs', 'story', 'profile', 'graph', 'call-stack'
];
/** pane kinds renamed since: a restored layout or a setting may still name the old one */
const RENAMED: { [old: string]: PaneKind } = { stacks: 'call-stack' };
const OPEN_PANE = 'xsched:open-pane';
/** the command that opens the panes of the default layout (the defaultLayout setting) */
export const OPEN_LAYOUT = 'xsched:open-default-layout';

/** The command id that opens a kind of pane: xsched:open-task-stream, ... */
export function openCommand(kind: PaneKind): string {
  return `xsched:open-${kind}`;
}

/** POST .../profile-reset: the scheduler starts the cluster's profile again (said, and
 * raised, when it cannot). */
async function resetProfile(cluster: string): Promise<number> {
  try {
    const reply = await post<{ profile: { since: number } }>(`clusters/${encodeURIComponent(cluster)}/profile-reset`, {});
    return reply.profile.since;
  } catch (e) {
    void showErrorMessage('xsched: could not reset the profile', String(e));
    throw e;
  }
}

function create(kind: PaneKind, cluster: string, name: string, keyConsole: KeyConsole | null,
  interrupter: TaskInterrupter | null, openKey: KeyOpener | null): XschedPane {
  switch (kind) {
    case 'task-stream':
      return new TaskStreamPane(cluster, name, openKey);
    case 'progress':
      return new ProgressPane(cluster, name);
    case 'worker-memory':
      return new WorkerMemoryPane(cluster, name);
    case 'timeline':
      return new TimelinePane(cluster, name);
    case 'logs':
      return new LogsPane(cluster, name);
    case 'profile':
      return new ProfilePane(cluster, name, resetProfile);
    case 'graph':
      return new GraphPane(cluster, name, (id, group) =>
        request<IGroupKeysReply>(`clusters/${encodeURIComponent(id)}/group?name=${encodeURIComponent(group)}`), openKey);
    case 'call-stack':
      return new StacksPane(cluster, name, interrupter);
    case 'story':
      return new StoryPane(cluster, name, async (id, key) => {
        const reply = await request<{ key: string; story: IStoryEntry[]; now?: string; holders?: string[] }>(
          `clusters/${encodeURIComponent(id)}/story?key=${encodeURIComponent(key)}`
        );
        return { story: reply.story, now: reply.now, holders: reply.holders };
      }, keyConsole);
    default:
      return new WorkersPane(cluster, name);
  }
}

export interface IPaneHost {
  /** the sidebar's websocket */
  updates: Updates;
  /** the cluster selected in the sidebar, if any */
  selected: IClusterSummary | null;
  /** every cluster the sidebar knows */
  clusters: IClusterSummary[];
}

/** Opens panes, keeps them in a tracker for the layout restorer, and watches their clusters. */
export class Panes {
  constructor(
    private app: JupyterFrontEnd,
    private host: IPaneHost,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) {
    this.tracker = new WidgetTracker<XschedPane>({ namespace: 'xsched-pane' });
    app.commands.addCommand(OPEN_PANE, {
      label: args => `xsched: Open ${PANE_TITLES[(args.kind as PaneKind) || 'workers'] || 'Pane'}`,
      execute: args => this.open(args.kind as PaneKind, (args.cluster as string) || undefined)
    });
    for (const kind of PANE_KINDS) {
      app.commands.addCommand(openCommand(kind), {
        label: `xsched: Open ${PANE_TITLES[kind]}`,
        caption: `Open the ${PANE_TITLES[kind].toLowerCase()} of the cluster selected in the xsched sidebar`,
        execute: () => this.open(kind)
      });
      palette?.addItem({ command: openCommand(kind), category: 'xsched' });
    }
    app.commands.addCommand(OPEN_LAYOUT, {
      label: 'xsched: Open Default Layout',
      caption: 'Open the panes of the default layout (the xsched setting "defaultLayout") for the selected cluster',
      execute: args => this.openLayout((args.cluster as string) || undefined)
    });
    palette?.addItem({ command: OPEN_LAYOUT, category: 'xsched' });
    if (restorer) {
      void restorer.restore(this.tracker, {
        command: OPEN_PANE,
        args: w => ({ kind: w.kind, cluster: w.cluster }),
        name: w => w.kind
      });
    }
    host.updates.listen(msg => this._onMessage(msg));
  }

  readonly tracker: WidgetTracker<XschedPane>;
  /** opens a console on a worker with a key's value bound (the story pane's button) */
  keyConsole: KeyConsole | null = null;
  /** seconds between two telemetry messages (the paneInterval setting) */
  interval = 0.5;
  /** the panes of the default layout, top to bottom (the defaultLayout setting) */
  layout: PaneKind[] = ['task-stream', 'progress', 'worker-memory'];

  /** Open the default layout's panes for `cluster` (default: the one selected): the first
   * beside what is open, the others under it, as `open` places them. */
  async openLayout(cluster?: string): Promise<XschedPane[]> {
    const opened: XschedPane[] = [];
    for (const kind of this.layout.map(k => RENAMED[k] || k).filter(k => PANE_KINDS.includes(k))) {
      const pane = await this.open(kind, cluster);
      if (!pane) {
        break; // (no cluster to show: open() said so once)
      }
      opened.push(pane);
    }
    return opened;
  }

  /** Open (or show) the pane of `kind` for `cluster` (default: the one selected, or the only one). */
  async open(kind: PaneKind, cluster?: string): Promise<XschedPane | null> {
    kind = (RENAMED[kind] || kind) as PaneKind; // (a layout saved before a pane was renamed)
    if (!PANE_KINDS.includes(kind)) {
      void showErrorMessage('xsched', `There is no pane "${kind}"; panes: ${PANE_KINDS.join(', ')}.`);
      return null;
    }
    let target = cluster ? this.host.clusters.find(c => c.id === cluster) || null : this.host.selected;
    if (!cluster && !target && this.host.clusters.length === 1) {
      target = this.host.clusters[0];
    }
    const id = cluster || target?.id;
    if (!id) {
      void showErrorMessage(
        'xsched: which cluster?',
        this.host.clusters.length
          ? 'Select a cluster in the xsched sidebar first.'
          : 'No xsched cluster is running: start one (LocalCluster(), or "New cluster" in the sidebar).'
      );
      return null;
    }
    const name = target?.name || id;
    let pane = this.tracker.find(w => w.kind === kind) || null;
    if (pane) {
      if (pane.cluster !== id) {
        pane.setCluster(id, name);
        void this.tracker.save(pane);
      }
    } else {
      pane = create(kind, id, name, (cluster, worker, key) => this.keyConsole ? this.keyConsole(cluster, worker, key)
        : Promise.resolve(), async (cluster, key) => {
        try {
          await post(`clusters/${encodeURIComponent(cluster)}/interrupt`, { key });
        } catch (e) {
          void showErrorMessage('xsched: could not interrupt the task', String(e));
        }
      }, (cluster, key) => void this.showKey(cluster, key));
      pane.disposed.connect(() => this.sync());
      // the first pane beside what is open (a notebook), the next ones under the last pane
      const last = this._last && !this._last.isDisposed ? this._last : null;
      this.app.shell.add(pane, 'main', last ? { ref: last.id, mode: 'split-bottom' } : { mode: 'split-right' });
      this._last = pane;
      void this.tracker.add(pane);
    }
    this.app.shell.activateById(pane.id);
    this.sync(kind === 'task-stream');
    return pane;
  }

  /** Show `key` in the story pane of `cluster` (opened, or moved to that cluster, if need be). */
  async showKey(cluster: string, key: string): Promise<void> {
    const pane = await this.open('story', cluster);
    if (pane instanceof StoryPane) {
      await pane.showKey(key);
    }
  }

  /** Tell the server which panes are open, per cluster (stopping clusters no pane shows). */
  sync(reset = false): void {
    const wanted = new Map<string, PaneKind[]>();
    this.tracker.forEach(p => {
      if (!p.isDisposed && !p.gone) {
        wanted.set(p.cluster, [...(wanted.get(p.cluster) || []), p.kind]);
      }
    });
    for (const cluster of this._watched) {
      if (!wanted.has(cluster)) {
        this.host.updates.watch(cluster, [], this.interval);
      }
    }
    for (const [cluster, kinds] of wanted) {
      this.host.updates.watch(cluster, kinds, this.interval, reset);
    }
    this._watched = new Set(wanted.keys());
  }

  private _onMessage(msg: any): void {
    if (msg?.type === 'telemetry') {
      const t = msg as ITelemetry;
      this.tracker.forEach(p => {
        if (p.cluster !== t.cluster) {
          return;
        }
        if (t.gone) {
          p.setGone(true);
        } else if (t.error) {
          p.setError(t.error);
        } else {
          p.setError(null);
          p.receive(t);
        }
      });
      if (t.gone) {
        this.sync();
      }
    } else if (msg?.type === 'clusters' && Array.isArray(msg.clusters)) {
      const names = new Map<string, string>(msg.clusters.map((c: IClusterSummary) => [c.id, c.name]));
      this.tracker.forEach(p => {
        if (!names.has(p.cluster) && !p.gone) {
          p.setGone(true);
          this.sync();
        } else if (names.has(p.cluster) && p.clusterName !== names.get(p.cluster)) {
          p.setCluster(p.cluster, names.get(p.cluster) as string);
        }
      });
    }
  }

  private _watched = new Set<string>();
  private _last: XschedPane | null = null;
}
