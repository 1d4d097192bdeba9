"""Every wire op, named once.

A message is a dict whose ``"op"`` says what it is. Senders write ``{"op": ops.FREE_KEYS,
...}``, receivers file their handlers under the same names, and ``schemas.py`` gives each
op its fields per receiver. A misspelt op is then an ``AttributeError`` where it is
written, not a message some peer drops as unknown; a test checks that no op is spelt out
anywhere else and that every handler table serves exactly the ops its schema table admits.

The same name may travel in several directions (``task-erred`` goes from a worker to the
scheduler and from the scheduler to a client): which fields it carries each way is the
business of the schema tables.

>>> COMPUTE_TASK, COMPUTE_TASK in ALL, "no-such-op" in ALL
('compute-task', True, False)
"""

from __future__ import annotations

# ---------------------------------------------------------------- everyone
PING = "ping"  #: are you there (answered with an empty reply)
VERSIONS = "versions"  #: (client -> scheduler, client -> worker) the versions of your python and packages
START_IPYTHON = "start-ipython"  #: start the kernel inside this process; reply: its connection info

# ---------------------------------------------------------------- framing (comm, messages)
REPLY = "reply"  #: the answer to a request, by its id
BATCH = "batch"  #: several small messages in one frame
CHUNKED = "chunked"  #: one large message cut into frames

# ---------------------------------------------------------------- client -> scheduler
REGISTER_CLIENT = "register-client"
UPDATE_GRAPH = "update-graph"  #: new tasks (entries and columns) and the keys the client wants
CLIENT_DESIRES_KEYS = "client-desires-keys"
CLIENT_RELEASES_KEYS = "client-releases-keys"
CANCEL_KEYS = "cancel-keys"
RETRY_KEYS = "retry-keys"
WHO_HAS = "who-has"
WHO_CAN_RUN = "who-can-run"
SCATTER_DONE = "scatter-done"  #: scattered data now lives on these workers
CLOSE_CLIENT = "close-client"
HEARTBEAT_CLIENT = "heartbeat-client"
SCHEDULER_INFO = "scheduler-info"
MEMORY_HISTORY = "memory-history"
RUN_ON_SCHEDULER = "run-on-scheduler"
RETIRE_WORKERS = "retire-workers"
REPLICATE = "replicate"  #: copy keys until n workers hold each (reply once the copies are in place)
REBALANCE = "rebalance"  #: move keys from workers holding more bytes than the mean to ones below it
RESTART = "restart"
RESTART_WORKERS = "restart-workers"  #: restart some workers through their nannies; their tasks go elsewhere
SUBSCRIBE_PROGRESS = "subscribe-progress"
UNSUBSCRIBE_PROGRESS = "unsubscribe-progress"
PUBLISH_DATASET = "publish-dataset"
GET_DATASET = "get-dataset"
LIST_DATASETS = "list-datasets"
UNPUBLISH_DATASET = "unpublish-dataset"
SET_METADATA = "set-metadata"  #: a small value under nested keys, kept by the scheduler
GET_METADATA = "get-metadata"
UPLOAD_FILE = "upload-file"  #: (also scheduler -> worker) a file for every worker's path
ENVIRONMENT_START = "environment-start"  #: (also scheduler -> worker) an environment upload begins
ENVIRONMENT_CHUNK = "environment-chunk"  #: (also scheduler -> worker) one piece of it
ENVIRONMENT_DONE = "environment-done"  #: (also scheduler -> worker) its end and checksum
FIRE_AND_FORGET = "fire-and-forget"  #: keep computing these keys after the client has gone
SHUTDOWN = "shutdown"  #: close the scheduler and its workers (client.shutdown())
# plugins (client.register_plugin): the plugins extension
REGISTER_WORKER_PLUGIN = "register-worker-plugin"  #: a worker or nanny plugin, for every worker now and later
UNREGISTER_WORKER_PLUGIN = "unregister-worker-plugin"  #: forget it; every worker tears it down
REGISTER_SCHEDULER_PLUGIN = "register-scheduler-plugin"  #: a plugin for the scheduler process itself
UNREGISTER_SCHEDULER_PLUGIN = "unregister-scheduler-plugin"
# coordination primitives (Lock, MultiLock, Semaphore, Queue, Variable, Event): the coordination extension
LOCK_ACQUIRE = "lock-acquire"  #: reply when granted, or when its timeout passes
LOCK_RELEASE = "lock-release"
MULTI_LOCK_ACQUIRE = "multi-lock-acquire"  #: several lock names at once (all, or num_locks of them); reply when granted
MULTI_LOCK_RELEASE = "multi-lock-release"
SEMAPHORE_ACQUIRE = "semaphore-acquire"
SEMAPHORE_RELEASE = "semaphore-release"
SEMAPHORE_VALUE = "semaphore-value"  #: leases held now
QUEUE_PUT = "queue-put"
QUEUE_GET = "queue-get"
QUEUE_SIZE = "queue-size"
QUEUE_ABANDON = "queue-abandon"  #: a waiting get or put its caller gave up on (interrupted, cancelled)
VARIABLE_SET = "variable-set"
VARIABLE_GET = "variable-get"
VARIABLE_DELETE = "variable-delete"
EVENT_SET = "event-set"
EVENT_CLEAR = "event-clear"
EVENT_IS_SET = "event-is-set"
EVENT_WAIT = "event-wait"
PUBSUB_SUBSCRIBE = "pubsub-subscribe"  #: Sub(topic): messages published from now on go to its queue
PUBSUB_UNSUBSCRIBE = "pubsub-unsubscribe"
PUBSUB_PUBLISH = "pubsub-publish"  #: Pub(topic).put(msg): a copy to every subscription's queue
LOG_EVENT = "log-event"  #: (also worker -> scheduler) an event on a topic (xsched.log_event, print, warn)
GET_EVENTS = "get-events"
SUBSCRIBE_TOPIC = "subscribe-topic"
UNSUBSCRIBE_TOPIC = "unsubscribe-topic"
GET_LOGS = "get-logs"  #: (also to a worker) recent records of the process's xsched loggers
GET_TASK_STREAM = "get-task-stream"
HAS_WHAT = "has-what"
GET_NBYTES = "get-nbytes"  #: bytes of the keys in memory, per key or summed per prefix
PROCESSING = "processing"
STORY = "story"
DUMP_STATE = "dump-state"  #: (also to a worker) what the process knows, for dump_cluster_state
TASK_SPEC = "task-spec"  #: a task's spec bytes, its functions and inputs (recreate_error_locally)
TELEMETRY = "telemetry"  #: what a live dashboard shows, since the caller's cursors (telemetry extension)

# ---------------------------------------------------------------- worker -> scheduler
REGISTER_WORKER = "register-worker"
HEARTBEAT_WORKER = "heartbeat-worker"
HEARTBEAT_INTERVAL = "heartbeat-interval"  #: scheduler -> worker: beat every this many seconds from now on
TASK_FINISHED = "task-finished"
TASK_ERRED = "task-erred"  #: (also scheduler -> client) a task raised
ADD_KEYS = "add-keys"  #: the worker holds these keys (a copy, or scattered data)
MISSING_DATA = "missing-data"  #: a peer did not have a key the scheduler said it had
RESCHEDULE = "reschedule"
WORKER_STATUS = "worker-status"  #: running / paused
UNREGISTER_WORKER = "unregister-worker"
RETIRE_WORKER = "retire-worker"  #: the worker asks to be retired (lifetime, SIGTERM)
STEAL_RESPONSE = "steal-response"
TASK_SECEDED = "task-seceded"
TASK_REJOINED = "task-rejoined"
UPLOAD_FILE_DONE = "upload-file-done"
ENVIRONMENT_ACK = "environment-ack"
ENVIRONMENT_READY = "environment-ready"
GET_NANNY_PLUGINS = "get-nanny-plugins"  #: (a worker under a nanny, before it registers) what its nanny needs
PLUGIN_DONE = "plugin-done"  #: a plugin-add or plugin-remove carried out, or its error
TASK_PAUSED = "task-paused"  #: a task paused at a breakpoint (paused: true, where) or went on (false)
WORKER_ACTIVITY = "worker-activity"  #: data a worker fetched or spilled lately: its task stream's transfers, disk I/O
# the p2p shuffle (worker/shuffle.py, the shuffle extension)
SHUFFLE_GET = "shuffle-get"  #: the current run of a shuffle: its number and the worker of each output
SHUFFLE_RESTART = "shuffle-restart"  #: a run's data is incomplete somewhere: start the shuffle again

# ---------------------------------------------------------------- scheduler -> worker
COMPUTE_TASK = "compute-task"
FREE_KEYS = "free-keys"
FORGET_FUNCTIONS = "forget-functions"
ACQUIRE_REPLICAS = "acquire-replicas"
STEAL_REQUEST = "steal-request"
CLOSE_WORKER = "close-worker"
PLUGIN_ADD = "plugin-add"  #: set up a worker plugin here, or hand a nanny plugin to this worker's nanny
PLUGIN_REMOVE = "plugin-remove"  #: tear it down
SHUFFLE_FORGET = "shuffle-forget"  #: drop what this worker holds of a shuffle's runs before ``run``

# ---------------------------------------------------------------- clients and peers -> worker
GET_DATA = "get-data"
PUT_DATA = "put-data"
BULK_RECEIVE = "bulk-receive"  #: a client is about to push large buffers on the side channel
RUN = "run"  #: run a function in the worker process
CALL_STACK = "call-stack"  #: the Python stacks of the tasks running there now
INTERRUPT_TASK = "interrupt-task"  #: raise TaskInterrupted in these tasks' threads, if they run there now
PROFILE = "profile"  #: sample the task threads' stacks for a while
DEBUG_ATTACH = "debug-attach"  #: open a pdb session on a failed task's frames or a paused task (worker/debugging.py)
DEBUG_INPUT = "debug-input"  #: one line for that session's pdb; reply: what it printed since, and its prompt
DEBUG_DETACH = "debug-detach"  #: leave the session (a paused task stays paused)
DEBUG_LIST = "debug-list"  #: the tasks paused at breakpoints and the post-mortems kept there
DEBUG_RELEASE = "debug-release"  #: the client no longer wants these keys: drop their post-mortems
DEBUG_RECREATE = "debug-recreate"  #: a failed task's function and inputs, for client.recreate_error_locally
ACTOR_CALL = "actor-call"  #: run a method of an actor this worker holds (worker/actors.py); reply: its result
ACTOR_ATTRIBUTE = "actor-attribute"  #: read an attribute of an actor this worker holds
SHUFFLE_RECEIVE = "shuffle-receive"  #: (peer -> worker) one input's pieces for the outputs this worker holds

# ---------------------------------------------------------------- scheduler -> client
KEY_IN_MEMORY = "key-in-memory"
KEY_LOST = "key-lost"
KEY_CANCELLED = "key-cancelled"
WARNING = "warning"
SCHEDULER_CLOSING = "scheduler-closing"
PROGRESS = "progress"
EVENT = "event"  #: an event on a topic the client subscribed to, or a task's print/warn for it

#: every op name above
ALL: frozenset[str] = frozenset(v for k, v in dict(globals()).items() if k.isupper() and isinstance(v, str))
