// xsched-labextension: an "xsched" tab in the left sidebar of JupyterLab 4.
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Dialog, ICommandPalette, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { IClusterSummary, IKernelReply, IStoryEntry, post, request } from './api';
import { ClusterPanel, clusterLabel, storyTable } from './panel';
import { PaneKind, Panes } from './panes';

const PLUGIN_ID = 'xsched-labextension:plugin';

const ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
  '<g class="jp-icon3" fill="#616161">' +
  '<circle cx="12" cy="5" r="3"/><circle cx="5" cy="18" r="3"/><circle cx="19" cy="18" r="3"/>' +
  '<path d="M11 7.5h2v4l5 4.2-1.3 1.5L12 13.3l-4.7 3.9L6 15.7l5-4.2z"/></g></svg>';

export const xschedIcon = new LabIcon({ name: 'xsched:icon', svgstr: ICON_SVG });

namespace CommandIDs {
  export const open = 'xsched:open-panel';
  export const insertClient = 'xsched:insert-client';
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'A sidebar panel for xsched clusters (workers, memory, task groups, consoles) and live panes ' +
    'in the main area: task stream, progress, worker memory, workers, timeline, logs, story.',
  autoStart: true,
  requires: [],
  optional: [ILayoutRestorer, INotebookTracker, ISettingRegistry, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    notebooks: INotebookTracker | null,
    settingRegistry: ISettingRegistry | null,
    palette: ICommandPalette | null
  ) => {
    let clientName = 'client';
    let newClusterWorkers = 2;

    const insertClient = (c: IClusterSummary) => {
      const panel = notebooks?.currentWidget;
      if (!panel) {
        void showErrorMessage('No notebook', 'Open a notebook to insert a client into.');
        return;
      }
      const nb = panel.content;
      const code = `from xsched import Client\n${clientName} = Client("${c.address}")\n${clientName}`;
      const cell = nb.activeCell;
      if (cell && cell.model.sharedModel.getSource().trim() === '') {
        cell.model.sharedModel.setSource(code);
      } else {
        NotebookActions.insertBelow(nb);
        nb.activeCell?.model.sharedModel.setSource(code);
      }
      app.shell.activateById(panel.id);
    };

    const consoleOn = async (c: IClusterSummary, target: string): Promise<any> => {
      const k = await post<IKernelReply>(`clusters/${encodeURIComponent(c.id)}/kernels`, { target });
      return app.commands.execute('console:create', {
        name: `xsched ${k.name}`,
        kernelPreference: { id: k.id }
      });
    };

    const panel = new ClusterPanel({
      insertClient,
      openConsole: async (c, target) => {
        try {
          await consoleOn(c, target);
        } catch (e) {
          void showErrorMessage('xsched: could not open the console', String(e));
        }
      },
      debug: async (c, worker, key) => {
        // pdb on the failed (or paused) task, in the kernel of the worker that holds its frames
        try {
          const console = await consoleOn(c, worker);
          await console.sessionContext.ready;
          console.console.inject(`worker.debugging.console(${JSON.stringify(key)})`);
        } catch (e) {
          void showErrorMessage('xsched: could not debug the task', String(e));
        }
      },
      showStory: async (c, key) => {
        try {
          const reply = await request<{ key: string; story: IStoryEntry[] }>(
            `clusters/${encodeURIComponent(c.id)}/story?key=${encodeURIComponent(key)}`
          );
          const body = storyTable(reply.story);
          await showDialog({
            title: `Story of ${key}`,
            body: new Widget({ node: body }),
            buttons: [Dialog.okButton()]
          });
        } catch (e) {
          void showErrorMessage('xsched: no story', String(e));
        }
      },
      newCluster: async () => {
        try {
          const reply = await post<{ id: string }>('clusters', { workers: newClusterWorkers });
          panel.select(reply.id);
        } catch (e) {
          void showErrorMessage('xsched: could not start a cluster', String(e));
        }
      },
      scale: async (c, n) => {
        try {
          await post(`clusters/${encodeURIComponent(c.id)}`, { workers: n }, 'PATCH');
        } catch (e) {
          void showErrorMessage('xsched: could not scale', String(e));
        }
      },
      openPane: (c, kind) => {
        void panes.open(kind as PaneKind, c.id);
      },
      openLayout: c => {
        void panes.openLayout(c.id);
      },
      shutdown: async c => {
        const result = await showDialog({
          title: 'Shut down cluster?',
          body: `Shut down ${clusterLabel(c)} at ${c.address} and its workers?`,
          buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Shut down' })]
        });
        if (!result.button.accept) {
          return;
        }
        try {
          await request(`clusters/${encodeURIComponent(c.id)}`, { method: 'DELETE' });
        } catch (e) {
          void showErrorMessage('xsched: could not shut down', String(e));
        }
      }
    });
    panel.title.icon = xschedIcon;
    app.shell.add(panel, 'left', { rank: 300 });
    if (restorer) {
      restorer.add(panel, 'xsched-cluster-panel');
    }

    const panes = new Panes(app, panel, restorer, palette);
    // the story pane's "Console with its value": the worker's kernel, the value bound to `value`
    panes.keyConsole = async (cluster, worker, key) => {
      try {
        const console = await consoleOn({ id: cluster } as IClusterSummary, worker);
        await console.sessionContext.ready;
        console.console.inject(`value = worker.data[${JSON.stringify(key)}]\nvalue`);
      } catch (e) {
        void showErrorMessage('xsched: could not open the console', String(e));
      }
    };

    app.commands.addCommand(CommandIDs.open, {
      label: 'Show xsched clusters',
      execute: () => app.shell.activateById(panel.id)
    });
    app.commands.addCommand(CommandIDs.insertClient, {
      label: 'Insert xsched client for the selected cluster',
      isEnabled: () => panel.selected !== null,
      execute: () => {
        const c = panel.selected;
        if (c) {
          insertClient(c);
        }
      }
    });
    if (palette) {
      palette.addItem({ command: CommandIDs.open, category: 'xsched' });
      palette.addItem({ command: CommandIDs.insertClient, category: 'xsched' });
    }

    if (settingRegistry) {
      settingRegistry
        .load(PLUGIN_ID)
        .then(settings => {
          const apply = () => {
            clientName = (settings.get('clientName').composite as string) || 'client';
            newClusterWorkers = settings.get('newClusterWorkers').composite as number;
            panel.updates.interval = settings.get('updateInterval').composite as number;
            const paneInterval = (settings.get('paneInterval').composite as number) / 1000;
            if (paneInterval !== panes.interval) {
              panes.interval = paneInterval;
              panes.sync();
            }
            panes.layout = (settings.get('defaultLayout').composite as PaneKind[]) || panes.layout;
            panel.updates.send();
          };
          apply();
          settings.changed.connect(apply);
        })
        .catch(reason => console.warn('xsched: settings not loaded', reason));
    }
  }
};

export default plugin;
