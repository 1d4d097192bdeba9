"""The transition table of the scheduler's tasks: one small method per (start, finish) pair.

Every change of ``TaskState.state`` goes through ``_transition`` (which finds the method in
``_TRANSITIONS``) and ``_set_state`` (which logs it for ``story(key)`` and tells the
observers). A method returns *recommendations*, ``{key: finish}``, that ``_transitions``
follows until none is left; a pair missing from the table raises ``InvalidTransition``
with the key's story. A pair with no method of its own goes through ``released``
(``processing -> waiting`` is ``processing -> released -> waiting``).

This is a mixin of ``SchedulerState`` (``machine.py``): it reads and writes the machine's
tables (``tasks``, ``workers``, ``queued`` ...) and appends instructions to ``self._out``.

>>> sorted(finish for start, finish in Transitions._TRANSITIONS if start == "processing")
['erred', 'memory', 'released']
"""

from __future__ import annotations

import heapq

from ...protocol import ops
from .entities import _EMPTY, TASK_ORDER, TaskState, WorkerState, _drop_waiter, _grown, _with, _without
from .events import InvalidTransition, ToClient, ToWorker

#: A result pickled to at most this many bytes is kept by the scheduler while dependents
#: wait for it, and sent along with each of their compute-tasks to a worker that lacks it:
#: a peer fetch (a request, a reply and four state changes) cost far more than the bytes.
#: Small enough that the values kept stay far below the scheduler's own bytes per task.
INLINE_DEPENDENCY_BYTES = 256


def in_memory_msg(ts: TaskState) -> dict:
    """The client's news that a key is ready, with who holds it (so that fetching it costs
    one round trip to a holder, not a who-has question to the scheduler first)."""
    return {"op": ops.KEY_IN_MEMORY, "key": ts.key, "type": ts.type,
            "workers": [ws.address for ws in ts.who_has][:8]}


class Transitions:
    """Task transitions and the bookkeeping they share (a mixin of ``SchedulerState``)."""

    def _transitions(self, recs: dict, stimulus_id: str) -> None:
        while recs:
            key, finish = recs.popitem()
            ts = self.tasks.get(key)
            if ts is None:
                continue
            arg = None
            if isinstance(finish, tuple):
                finish, arg = finish
            new = self._transition(ts, finish, arg, stimulus_id)
            for k, v in new.items():
                recs[k] = v

    def _transition(self, ts: TaskState, finish: str, arg, stimulus_id: str) -> dict:
        start = ts.state
        if start == finish:
            return {}
        func = self._TRANSITIONS.get((start, finish))
        if func is not None:
            self.transition_counter += 1
            return func(self, ts, arg, stimulus_id) or {}
        if start != "released" and finish != "released" and (start, "released") in self._TRANSITIONS \
                and ("released", finish) in self._TRANSITIONS:
            recs = self._transition(ts, "released", None, stimulus_id)
            if ts.key in self.tasks and ts.state == "released":
                more = self._transition(ts, finish, arg, stimulus_id)
                recs.update(more)
            return recs
        raise InvalidTransition(
            f"{ts.key!r}: no transition {start} -> {finish}; story: {self.story(ts.key)[-10:]}"
        )

    def _set_state(self, ts: TaskState, finish: str, stimulus_id: str) -> None:
        self._log(ts.key, ts.state, finish, stimulus_id)
        start, ts.state = ts.state, finish
        if ts.inline is not None and finish != "memory":
            ts.inline = None  # (the value is only ever the one of its memory state)
        for hook in self.transition_hooks:
            hook(ts, start, finish)

    def _log(self, key, start, finish, stimulus_id) -> None:
        self.log.append((key, start, finish, stimulus_id))

    # released -> waiting: wire up inputs; run now if they are all in memory
    def _transition_released_waiting(self, ts: TaskState, _arg, sid: str) -> dict:
        if ts.run_spec is None:
            return self._lost_forever(ts, sid)
        recs: dict = {}
        ts.waiting_on = _EMPTY
        for dts in ts.dependencies:
            dts.waiters = _with(dts.waiters, ts)
            if dts.state == "erred":
                recs[ts.key] = ("erred", dts)
            elif dts.state != "memory":
                ts.waiting_on = _grown(ts.waiting_on)
                ts.waiting_on.add(dts)
                if dts.state in ("released", "forgotten"):
                    recs[dts.key] = "waiting"
        self._set_state(ts, "waiting", sid)
        if ts.key not in recs and not ts.waiting_on:
            recs[ts.key] = "processing"
        return recs

    def _lost_forever(self, ts: TaskState, sid: str) -> dict:
        """A key with no recipe and no copy (lost scattered data or an unknown key)."""
        text = (f"the data of {ts.key!r} is lost (it was scattered or the scheduler forgot it, "
                "and there is no recipe to recompute it); scatter it again: tasks that wait for it "
                "then run")
        ts.exception, ts.traceback, ts.exception_text = b"", b"", text
        ts.exception_blame = ts
        self._set_state(ts, "erred", sid)
        recs = {}
        for dts in ts.dependents:
            if dts.state in ("waiting", "queued", "no-worker", "processing", "released"):
                recs[dts.key] = ("erred", ts)
        self._notify_erred(ts, ts.who_wants)
        return recs

    # waiting -> processing: choose a worker, or queue, or wait for a suitable worker
    def _transition_waiting_processing(self, ts: TaskState, ws: "WorkerState | None", sid: str) -> dict:
        if ts.waiting_on:
            return {}
        if ws is None:
            if self._queue_first(ts):
                return {ts.key: "queued"} if self._valid_workers_exist(ts) else {ts.key: "no-worker"}
            ws = self._decide_worker(ts)
        if ws is None:
            if self._valid_workers_exist(ts):
                return {ts.key: "queued"}
            return {ts.key: "no-worker"}
        self._set_state(ts, "processing", sid)
        self._send_compute(ts, ws)
        return {}

    def _transition_waiting_queued(self, ts: TaskState, _arg, sid: str) -> dict:
        self._set_state(ts, "queued", sid)
        ts.queued_seq = next(self._queue_seq)
        heapq.heappush(self.queued, (ts.priority, ts.queued_seq, ts))
        self._queued_count += 1
        self._queue_grew = True
        return {}

    def _transition_queued_processing(self, ts: TaskState, ws, sid: str) -> dict:
        if ts.waiting_on:  # an input was lost while it queued: wait for its recomputation
            self._queued_count -= 1
            self._set_state(ts, "waiting", sid)
            return {}
        ws = ws or self._decide_worker(ts)
        if ws is None:
            return {}
        self._queued_count -= 1  # the heap entry goes stale and is skipped when popped
        self._set_state(ts, "processing", sid)
        self._send_compute(ts, ws)
        return {}

    def _transition_queued_released(self, ts: TaskState, _arg, sid: str) -> dict:
        self._queued_count -= 1
        return self._transition_waiting_released(ts, _arg, sid)

    def _transition_waiting_no_worker(self, ts: TaskState, _arg, sid: str) -> dict:
        self._set_state(ts, "no-worker", sid)
        self.unrunnable.add(ts)
        return {}

    def _transition_no_worker_processing(self, ts: TaskState, _arg, sid: str) -> dict:
        ws = self._decide_worker(ts)
        if ws is None:
            return {}
        self.unrunnable.discard(ts)
        self._set_state(ts, "waiting", sid)
        return self._transition_waiting_processing(ts, ws, sid)

    def _transition_no_worker_waiting(self, ts: TaskState, _arg, sid: str) -> dict:
        self.unrunnable.discard(ts)
        self._set_state(ts, "waiting", sid)
        return {ts.key: "processing"} if not ts.waiting_on else {}

    def _transition_no_worker_released(self, ts: TaskState, _arg, sid: str) -> dict:
        self.unrunnable.discard(ts)
        return self._transition_waiting_released(ts, _arg, sid)

    # processing -> memory: record data, wake dependents, release inputs no one needs
    def _transition_processing_memory(self, ts: TaskState, arg: tuple, sid: str) -> dict:
        ws, inline = arg  # the worker that has it, and the pickled value when small
        self._release_processing(ts, ws)
        self._add_replica(ts, ws)
        self._set_state(ts, "memory", sid)
        if inline is not None and len(inline) <= INLINE_DEPENDENCY_BYTES and ts.waiters:
            ts.inline = inline
        recs: dict = {}
        self._after_memory(ts, recs, inline)
        return recs

    def _after_memory(self, ts: TaskState, recs: dict, inline: bytes | None = None) -> None:
        dependents = ts.dependents
        if len(dependents) > 1:  # most urgent recommended last, so placed first (recs pop from the end),
            dependents = sorted(dependents, key=TASK_ORDER, reverse=True)  # one order whatever the set's
        for dts in dependents:
            if ts in dts.waiting_on:
                dts.waiting_on.discard(ts)
                if not dts.waiting_on and dts.state == "waiting":
                    recs[dts.key] = "processing"
        for dep in ts.dependencies:
            if not _drop_waiter(dep, ts):
                if not dep.who_wants and dep.state == "memory":
                    recs[dep.key] = "released"
        if ts.who_wants:
            msg = in_memory_msg(ts)
            if inline is not None:  # the value itself: the client asks no worker
                msg["inline"] = inline
            for client in ts.who_wants:
                self._out.append(ToClient(client, msg))
        if not ts.waiters and not ts.who_wants:
            recs[ts.key] = "released"

    def _transition_memory_released(self, ts: TaskState, _arg, sid: str) -> dict:
        if ts.who_has and (ts.waiters or ts.who_wants):
            return {}  # a stale recommendation: something needs this data again (e.g. a retry)
        for ws in ts.who_has:
            ws.has_what.discard(ts)
            ws.nbytes -= max(ts.nbytes, 0)
            self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [ts.key]}))
        ts.who_has.clear()
        self._set_state(ts, "released", sid)
        recs: dict = {}
        for dts in ts.dependents:
            if dts.state in ("waiting", "queued", "no-worker", "processing"):
                if dts.state == "processing":
                    recs[dts.key] = "released"  # its input vanished before it could fetch it
                else:
                    dts.waiting_on = _grown(dts.waiting_on)
                    dts.waiting_on.add(ts)
        if ts.who_wants:
            for client in ts.who_wants:
                self._out.append(ToClient(client, {"op": ops.KEY_LOST, "key": ts.key}))
        self._after_release(ts, recs)
        return recs

    def _transition_processing_released(self, ts: TaskState, _arg, sid: str) -> dict:
        ws = ts.processing_on
        if ws is not None:
            self._release_processing(ts, ws)
            if ws.address in self.workers:
                self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [ts.key]}))
        return self._transition_waiting_released(ts, _arg, sid)

    def _transition_waiting_released(self, ts: TaskState, _arg, sid: str) -> dict:
        for dts in ts.dependencies:
            _drop_waiter(dts, ts)
        ts.waiting_on.clear()
        self._set_state(ts, "released", sid)
        recs: dict = {}
        for dts in ts.dependencies:
            if not dts.waiters and not dts.who_wants and dts.state in ("memory", "waiting", "queued", "no-worker", "processing"):
                recs[dts.key] = "released"
        self._after_release(ts, recs)
        return recs

    def _transition_processing_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        recs: dict = {}
        ws = ts.processing_on
        self._release_processing(ts, ws)
        if ws is not None and ws.address in self.workers:
            self._out.append(ToWorker(ws.address, {"op": ops.FREE_KEYS, "keys": [ts.key]}))
        self._erred(ts, blame, sid, recs)
        return recs

    def _transition_waiting_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        recs: dict = {}
        self._erred(ts, blame, sid, recs)
        return recs

    def _transition_queued_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        self._queued_count -= 1
        return self._transition_waiting_erred(ts, blame, sid)

    def _transition_no_worker_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        self.unrunnable.discard(ts)
        return self._transition_waiting_erred(ts, blame, sid)

    def _transition_erred_released(self, ts: TaskState, _arg, sid: str) -> dict:
        ts.exception = ts.traceback = None
        ts.exception_text = ""
        ts.exception_blame = None
        ts.erred_on = None
        self._set_state(ts, "released", sid)
        recs: dict = {}
        for dts in ts.dependents:
            if dts.state == "erred":
                recs[dts.key] = "released"
        self._after_release(ts, recs)
        return recs

    def _transition_released_forgotten(self, ts: TaskState, _arg, sid: str) -> dict:
        recs: dict = {}
        self._forget(ts, sid, recs)
        return recs

    def _transition_erred_forgotten(self, ts: TaskState, _arg, sid: str) -> dict:
        recs: dict = {}
        self._forget(ts, sid, recs)
        return recs

    def _transition_released_erred(self, ts: TaskState, blame: TaskState, sid: str) -> dict:
        recs: dict = {}
        self._erred(ts, blame, sid, recs)
        return recs

    _TRANSITIONS = {
        ("released", "waiting"): _transition_released_waiting,
        ("waiting", "processing"): _transition_waiting_processing,
        ("waiting", "queued"): _transition_waiting_queued,
        ("waiting", "no-worker"): _transition_waiting_no_worker,
        ("waiting", "released"): _transition_waiting_released,
        ("waiting", "erred"): _transition_waiting_erred,
        ("queued", "processing"): _transition_queued_processing,
        ("queued", "released"): _transition_queued_released,
        ("queued", "erred"): _transition_queued_erred,
        ("no-worker", "processing"): _transition_no_worker_processing,
        ("no-worker", "waiting"): _transition_no_worker_waiting,
        ("no-worker", "released"): _transition_no_worker_released,
        ("no-worker", "erred"): _transition_no_worker_erred,
        ("processing", "memory"): _transition_processing_memory,
        ("processing", "released"): _transition_processing_released,
        ("processing", "erred"): _transition_processing_erred,
        ("memory", "released"): _transition_memory_released,
        ("erred", "released"): _transition_erred_released,
        ("erred", "forgotten"): _transition_erred_forgotten,
        ("released", "forgotten"): _transition_released_forgotten,
        ("released", "erred"): _transition_released_erred,
    }

    # ------------------------------------------------------------------ helpers
    def _erred(self, ts: TaskState, blame: TaskState, sid: str, recs: dict) -> None:
        if blame is not ts:
            ts.exception_blame = blame.exception_blame or blame
            ts.exception, ts.traceback = blame.exception, blame.traceback
            ts.exception_text = blame.exception_text
        for dts in ts.dependencies:
            if not _drop_waiter(dts, ts):
                if not dts.who_wants and dts.state == "memory":
                    recs[dts.key] = "released"
        ts.waiting_on.clear()
        self._set_state(ts, "erred", sid)
        for dts in ts.dependents:
            if dts.state in ("waiting", "queued", "no-worker", "processing", "released") and \
                    (dts.state != "released" or dts.who_wants or dts.waiters):
                recs[dts.key] = ("erred", ts)
        self._notify_erred(ts, ts.who_wants)
        if not ts.who_wants and not ts.waiters and not any(
                d.state not in ("forgotten", "released") for d in ts.dependents):
            recs.setdefault(ts.key, "forgotten")

    def _processing_to_erred(self, ts, exception, traceback, text, recs, worker: str | None = None) -> None:
        ts.exception, ts.traceback, ts.exception_text = exception, traceback, text
        ts.erred_on = worker
        ts.exception_blame = ts
        recs[ts.key] = ("erred", ts)

    def _notify_erred(self, ts: TaskState, clients) -> None:
        blame = ts.exception_blame or ts
        for client in clients:
            self._out.append(ToClient(client, {
                "op": ops.TASK_ERRED, "key": ts.key, "blame": blame.key, "exception": ts.exception or b"",
                "traceback": ts.traceback or b"", "text": ts.exception_text, "worker": blame.erred_on,
            }))

    def _forget(self, ts: TaskState, sid: str, recs: dict) -> None:
        if ts.who_wants or any(d.state != "forgotten" for d in ts.dependents if d.key in self.tasks):
            return
        self._set_state(ts, "forgotten", sid)
        del self.tasks[ts.key]
        self._drop_functions(ts)
        for dep in ts.dependencies:
            dep.dependents = _without(dep.dependents, ts)
            _drop_waiter(dep, ts)
            if dep.state in ("released", "erred") and not dep.who_wants and not dep.dependents:
                recs[dep.key] = "forgotten"
            elif dep.state == "memory" and not dep.waiters and not dep.who_wants:
                recs[dep.key] = "released"

    def _drop_functions(self, ts: TaskState) -> None:
        """``ts`` no longer refers to its functions: a function no task refers to any more is
        forgotten here and on the workers that had it."""
        if not ts.functions:
            return
        gone = []
        for fid in ts.functions:
            entry = self.functions[fid]
            entry[1] -= 1
            if entry[1] == 0:
                del self.functions[fid]
                gone.append(fid)
        ts.functions = ()
        if gone:
            for ws in self.workers.values():
                held = [fid for fid in gone if fid in ws.functions]
                if held:
                    ws.functions.difference_update(held)
                    self._out.append(ToWorker(ws.address, {"op": ops.FORGET_FUNCTIONS, "fids": held}))

    def _after_release(self, ts: TaskState, recs: dict) -> None:
        """A task just released: wanted again (a client or a dependent waits) -> waiting;
        else forgotten, unless a dependent may still need it recomputed."""
        if ts.who_wants or ts.waiters:
            recs[ts.key] = "waiting"
        elif not self._needed_by_lineage(ts):
            recs[ts.key] = "forgotten"

    def _needed_by_lineage(self, ts: TaskState) -> bool:
        """Keep a released task while something still refers to it (it may be recomputed)."""
        return any(d.state != "forgotten" for d in ts.dependents)

    def _maybe_release(self, ts: TaskState, recs: dict) -> None:
        if ts.waiters:
            return
        if ts.state == "erred":
            if not self._needed_by_lineage(ts):
                recs[ts.key] = "forgotten"
        elif ts.state in ("memory", "waiting", "queued", "no-worker", "processing"):
            recs[ts.key] = "released"
        elif ts.state == "released" and not self._needed_by_lineage(ts):
            recs[ts.key] = "forgotten"

    def _add_replica(self, ts: TaskState, ws: WorkerState) -> None:
        """``ws`` holds ``ts``. Its bytes count as ``ts.nbytes`` (what the computing worker
        measured), not what the holder reports for its copy: a copy can measure a little
        differently (a list's spare capacity), and releasing subtracts ``ts.nbytes``."""
        if ws not in ts.who_has:
            ts.who_has = _grown(ts.who_has)
            ts.who_has.add(ws)
            ws.has_what.add(ts)
            ws.nbytes += max(ts.nbytes, 0)

    def _release_processing(self, ts: TaskState, ws: WorkerState | None) -> None:
        if ws is not None:
            ws.occupancy -= ws.processing.pop(ts, 0.0)
            ws.long_running.discard(ts)
            self._untrack_stealable(ts, ws)
            self.stealing.pop(ts.key, None)
            self._started.discard(ts.key)
            if ts.resources:
                for r, amount in ts.resources.items():
                    ws.used_resources[r] = ws.used_resources.get(r, 0) - amount
            if self.workers.get(ws.address) is ws:
                self._freed_slots.add(ws)
                self._load.update(ws)
        if ts.limits:
            for name in ts.limits:
                self.limits_running[name] -= 1
        ts.processing_on = None

    def _send_compute(self, ts: TaskState, ws: WorkerState) -> None:
        ts.processing_on = ws
        ws.processing[ts] = duration = self.durations.get(ts.group, self.unknown_duration)
        ws.occupancy += duration
        self._load.update(ws)
        self._track_stealable(ts, ws)
        if ts.resources:
            for r, amount in ts.resources.items():
                ws.used_resources[r] = ws.used_resources.get(r, 0) + amount
        if ts.limits:
            for name, cap in ts.limits.items():
                self.limits[name] = cap
                self.limits_running[name] += 1
        msg = {
            "op": ops.COMPUTE_TASK, "key": ts.key, "run_spec": ts.run_spec, "priority": list(ts.priority),
            # holders sorted: a worker fetches from the first free one, so the same state always
            # leads to the same fetches, whatever the order of the set
            "who_has": {d.key: sorted(w.address for w in d.who_has) for d in ts.dependencies},
            "nbytes": {d.key: d.nbytes for d in ts.dependencies},
        }
        inline = None
        for d in ts.dependencies:
            if d.inline is not None and ws not in d.who_has:
                # the small value travels with the task: the worker holds it from now on
                # (and is told to free it like any replica), no fetch from a peer
                if inline is None:
                    inline = msg["inline"] = {}
                inline[d.key] = d.inline
                self._add_replica(d, ws)
        if ts.resources:
            msg["resources"] = ts.resources
        if ts.who_wants or ts.dependents:
            # a small result comes back inline (TaskFinished.inline): a waiting client has
            # it at once, and dependents placed elsewhere get it with their compute-task
            msg["wanted"] = True
        if ts.functions:
            missing = [fid for fid in ts.functions if fid not in ws.functions]
            if missing:  # the first of these tasks this worker gets brings the functions along
                msg["functions"] = {fid: self.functions[fid][0] for fid in missing}
                ws.functions.update(missing)
        self._out.append(ToWorker(ws.address, msg))

