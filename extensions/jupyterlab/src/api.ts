// Talking to the xsched server extension (/xsched/api/...): REST through ServerConnection
// (token or XSRF header added for us) and one websocket for pushed updates.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export interface IClusterSummary {
  id: string;
  /** the name a person chose (LocalCluster(name=...)) or "host · started HH:MM" */
  name: string;
  /** whether someone chose the name */
  named?: boolean;
  address: string;
  hostname?: string;
  pid?: number;
  started?: number;
  owned: boolean;
  status: 'running' | 'connecting' | 'unreachable';
  error?: string | null;
  workers: number;
  threads: number;
  memory: number;
  memory_limit: number;
  tasks?: { [state: string]: number };
}

export interface IWorkerRow {
  address: string;
  name: string;
  host?: string;
  pid?: number;
  nthreads: number;
  memory_limit: number;
  managed: number;
  unmanaged: number;
  spilled: number;
  rss: number;
  processing: number;
  in_memory: number;
  status?: string;
}

export interface ITaskGroup {
  name: string;
  states: { [state: string]: number };
  total: number;
  /** its keys listed (a few); worker: where a failed or paused one can be debugged */
  keys: { key: string; state: string; worker?: string; paused?: boolean }[];
  /** its tasks paused at a breakpoint now */
  paused?: number;
}

export interface IClusterDetail extends Omit<IClusterSummary, 'workers'> {
  workers: IWorkerRow[];
  n_workers: number;
  groups: ITaskGroup[];
  queued: number;
}

/** One transition of a key's story (GET clusters/<id>/story?key=K). */
export interface IStoryEntry {
  /** seconds since the epoch; null for transitions before the server first watched the cluster */
  time: number | null;
  start: string;
  finish: string;
  /** the worker the key is on in its new state, if any */
  worker: string | null;
  stimulus_id: string | null;
}

export interface IKernelReply {
  id: string;
  name: string;
  target: string;
  cluster: string;
}

const settings = ServerConnection.makeSettings();

export async function request<T>(
  path: string,
  init: RequestInit = {}
): Promise<T> {
  const url = URLExt.join(settings.baseUrl, 'xsched', 'api', path);
  const response = await ServerConnection.makeRequest(url, init, settings);
  const text = await response.text();
  if (!response.ok) {
    let message = text;
    try {
      message = JSON.parse(text).message || text;
    } catch {
      // not JSON: keep the text
    }
    throw new ServerConnection.ResponseError(response, message);
  }
  return (text ? JSON.parse(text) : null) as T;
}

export function post<T>(path: string, body: unknown, method = 'POST'): Promise<T> {
  return request<T>(path, { method, body: JSON.stringify(body) });
}

/** A websocket to /xsched/api/ws that reconnects after a drop. */
export class Updates {
  constructor(
    private onMessage: (msg: any) => void,
    private onStatus: (connected: boolean) => void
  ) {}

  subscribed: string | null = null;
  interval = 1000;

  open(): void {
    if (this._disposed) {
      return;
    }
    let url = URLExt.join(settings.wsUrl, 'xsched', 'api', 'ws');
    if (settings.appendToken && settings.token) {
      url += '?token=' + encodeURIComponent(settings.token);
    }
    const ws = new settings.WebSocket(url);
    this._ws = ws;
    ws.onopen = () => {
      this._delay = 500;
      this.onStatus(true);
      this.send();
      // a new connection has no cursors: every watch starts again (panes drop what they hold twice)
      for (const [cluster, w] of this._watches) {
        this._sendWatch(cluster, w.panes, w.interval, true);
      }
    };
    ws.onmessage = ev => {
      let msg: any;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        console.warn('xsched: bad update', e);
        return;
      }
      for (const listener of [(m: any) => this.onMessage(m), ...this._listeners]) {
        try {
          listener(msg);
        } catch (e) {
          console.warn('xsched: an update was not handled', e);
        }
      }
    };
    ws.onclose = () => {
      this.onStatus(false);
      if (!this._disposed) {
        window.setTimeout(() => this.open(), this._delay);
        this._delay = Math.min(this._delay * 2, 10000);
      }
    };
  }

  subscribe(id: string | null): void {
    this.subscribed = id;
    this.send();
  }

  send(): void {
    if (this._ws && this._ws.readyState === WebSocket.OPEN) {
      this._ws.send(
        JSON.stringify({ subscribe: this.subscribed, interval: this.interval })
      );
    }
  }

  /** Hear every message (the panes: {"type": "telemetry"}); returns a function that stops it. */
  listen(listener: (msg: any) => void): () => void {
    this._listeners.push(listener);
    return () => {
      this._listeners = this._listeners.filter(l => l !== listener);
    };
  }

  /**
   * Ask for telemetry of `cluster` for these panes every `interval` seconds; no panes: stop.
   * `reset`: start the task stream again from what the scheduler keeps.
   */
  watch(cluster: string, panes: string[], interval: number, reset = false): void {
    if (panes.length) {
      this._watches.set(cluster, { panes, interval });
    } else {
      this._watches.delete(cluster);
    }
    this._sendWatch(cluster, panes, interval, reset);
  }

  private _sendWatch(cluster: string, panes: string[], interval: number, reset: boolean): void {
    if (this._ws && this._ws.readyState === WebSocket.OPEN) {
      this._ws.send(JSON.stringify({ type: 'watch', cluster, panes, interval, reset }));
    }
  }

  dispose(): void {
    this._disposed = true;
    this._ws?.close();
  }

  private _listeners: ((msg: any) => void)[] = [];
  private _watches = new Map<string, { panes: string[]; interval: number }>();
  private _ws: WebSocket | null = null;
  private _delay = 500;
  private _disposed = false;
}
