"""The client side of xsched: ``Client``, futures, and what a notebook needs to reach a cluster.

``Client`` is the one class users hold. It is put together from mixins, one module per
reason, each of a few hundred lines; ``Client`` inherits them all, so every method is a
method of the client as users see it (``help(Client)``, the API reference), and each
mixin reads the client's own attributes (``_conn``, ``_states``, ``_pool``, ...) made in
``Client.__init__``::

    client.py      Client: connection, lifecycle (close, shutdown), the handlers of the
                   scheduler's messages (one table, by op), sync, as_current, display;
                   get_client, default_client; Executor
    refcount.py    RefCountMixin: futures counted per key; graphs and releases sent in order
    submit.py      SubmitMixin: submit, map, compute, persist, cancel, retry, get_executor
                   (executor.py: the client as a concurrent.futures.Executor)
    transfer.py    TransferMixin: gather, scatter, and fetching results from the workers
    datasets.py    DatasetsMixin: published datasets (and the Datasets mapping)
    admin.py       AdminMixin: run, run_on_scheduler, upload_file, restart (shipping an
                   environment), restart_workers, retire_workers, scheduler_info, nthreads, wait_for_workers,
                   who_has, who_can_run, replicate, rebalance, get_versions; UploadError,
                   RestartError
    plugins.py     PluginsMixin: register_plugin (worker, scheduler and nanny plugins),
                   unregister_worker_plugin, unregister_scheduler_plugin; PluginError
    diagnostics.py DiagnosticsMixin: events and topics (log_event, subscribe_topic), logs,
                   the task stream, has_what, processing, story, call_stack, profile,
                   dump_cluster_state; the handler of the scheduler's ``event`` op
    kernels.py     KernelsMixin: IPython kernels in the scheduler and workers
    debugging.py   DebuggingMixin: debug (pdb on a failed or paused task's frames, in its
                   worker), breakpoints, recreate_error_locally
    dual.py        sync_or_async: each public method written once, as what it awaits; a
                   synchronous client blocks on it, an asynchronous one awaits it

Mixins rather than separate objects (``client.datasets.publish(...)``) because the methods
are the public API as it has always been spelt, and they share one connection, one loop
and one table of futures; mixins rather than one long class because each reason reads
best alone. The wire format of update-graph is not here but in ``protocol/update_graph.py``,
beside the scheduler's reading of it.

Beside the Client: ``future.py`` (Future), ``waiting.py`` (wait, as_completed),
``worker_client.py`` (tasks that launch tasks), ``coordination.py`` (Lock, Semaphore,
Queue, Variable, Event: named primitives the scheduler keeps), ``loop.py`` (the
background loop of the synchronous clients), ``rpc.py`` (a thin scheduler connection for deploy and widgets),
``default.py`` (the default client; a leaf the graph layer may import),
``environment_pack.py`` (packing an environment for ``restart(environment=...)``).

This package imports nothing itself: ``xsched.client.default`` is imported by layers
below the client, and must not bring the network code along.
"""
