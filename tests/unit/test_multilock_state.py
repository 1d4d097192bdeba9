"""MultiLock in the pure CoordinationState: locks taken together, all or nothing, in the name
space of plain Locks. Every test checks the invariants (``validate``) after every event; the
last ones drive random interleavings of acquires, releases, timeouts and departures and
check from outside that no name ever has two holders and that nothing waits unless the
requesters deadlocked themselves. The handles and the extension are tested in
test_coordination_state.py, a real cluster in tests/cluster/test_coordination.py."""

from __future__ import annotations

import random

import pytest

from xsched.scheduler.extensions.coordination_state import (
    Acquire, ClientGone, Drop, Expire, MultiLockAcquire, MultiLockRelease, Owner, Release,
    Reply, WorkerGone,
)

# the state that checks its invariants after every event, and the replies by waiter id
from tests.unit.test_coordination_state import CoordinationState, replies

A, B, C = Owner("a"), Owner("b"), Owner("c", worker="tcp://w1:1")
D = Owner("d")




def holder(s, name):
    """The lease holding the lock ``name`` now, or None."""
    res = s.leases.get(("lock", name))
    return next(iter(res.holders), None) if res is not None else None


def multi(names, lease, owner, wid, **kw):
    return MultiLockAcquire(tuple(names), lease, owner, wid, **kw)


# ----------------------------------------------------------------------------- all or nothing
def test_a_multilock_takes_every_name_in_one_step_or_none_while_it_waits():
    s = CoordinationState()
    assert replies(s.handle(multi("ab", "M1", A, 1))) == {1: {"acquired": True, "names": ["a", "b"]}}
    assert holder(s, "a") == holder(s, "b") == "M1"
    assert s.handle(Acquire("lock", "c", "L", B, 2)) and holder(s, "c") == "L"
    # c is held: a MultiLock over c and d holds nothing while it waits
    assert s.handle(multi("cd", "M3", C, 3)) == []
    assert holder(s, "d") is None and s.stalled == {"d"}  # d free, kept for the first in its line
    out = s.handle(Release("lock", "c", "L", B, 4))
    assert replies(out) == {4: {"released": True}, 3: {"acquired": True, "names": ["c", "d"]}}
    assert holder(s, "c") == holder(s, "d") == "M3" and s.stalled == set()
    out = s.handle(MultiLockRelease(("a", "b"), "M1", A, 5), MultiLockRelease(("c", "d"), "M3", C, 6))
    assert replies(out) == {5: {"released": True}, 6: {"released": True}}
    assert s.leases == {} and s.waiting == {} and s.stalled == set()


def test_opposite_orders_never_deadlock():
    """[a, b] and [b, a]: one is granted whole, the other waits holding nothing, then goes."""
    s = CoordinationState()
    out = s.handle(multi("ab", "M1", A, 1), multi("ba", "M2", B, 2), multi("ab", "M3", A, 3),
                   multi("ba", "M4", B, 4))
    assert replies(out) == {1: {"acquired": True, "names": ["a", "b"]}}
    order = []
    for wid, (lease, owner) in enumerate([("M1", A), ("M2", B), ("M3", A), ("M4", B)], start=10):
        out = s.handle(MultiLockRelease(("a", "b"), lease, owner, wid))
        order += [w for w, h in replies(out).items() if h.get("acquired")]
    assert order == [2, 3, 4]  # in the order they asked
    assert s.leases == {} and s.waiting == {}


def test_a_partial_overlap_waits_for_the_overlap_only():
    s = CoordinationState()
    s.handle(multi("ab", "M1", A, 1))
    assert replies(s.handle(multi("cd", "M2", B, 2)))[2]["acquired"] is True  # other names pass by
    assert s.handle(multi("bc", "M3", C, 3)) == []
    out = s.handle(MultiLockRelease(("a", "b"), "M1", A, 4))
    assert 3 not in replies(out)  # b is free, c is not: M3 takes neither
    assert holder(s, "b") is None
    out = s.handle(MultiLockRelease(("c", "d"), "M2", B, 5))
    assert replies(out)[3] == {"acquired": True, "names": ["b", "c"]}


# ----------------------------------------------------------------------------- num_locks
def test_num_locks_takes_that_many_of_the_free_names_in_the_order_given():
    s = CoordinationState()
    s.handle(Acquire("lock", "b", "L", B, 1))
    out = s.handle(multi("abc", "M2", A, 2, num_locks=2))
    assert replies(out) == {2: {"acquired": True, "names": ["a", "c"]}}
    assert holder(s, "a") == holder(s, "c") == "M2" and holder(s, "b") == "L"
    # one of three, when the first free is the last given
    s.handle(MultiLockRelease(("a", "c"), "M2", A, 3))
    out = s.handle(multi("ba", "M4", C, 4, num_locks=1))
    assert replies(out) == {4: {"acquired": True, "names": ["a"]}}
    # none free: it waits, and takes the first that comes free
    assert s.handle(multi("ab", "M5", D, 5, num_locks=1)) == []
    out = s.handle(Release("lock", "b", "L", B, 6))
    assert replies(out)[5] == {"acquired": True, "names": ["b"]}


def test_num_locks_out_of_range_duplicates_and_no_names_are_refused():
    s = CoordinationState()
    for ev, words in ((multi("ab", "M", A, 1, num_locks=3), "num_locks must be between 1 and 2"),
                      (multi("ab", "M", A, 2, num_locks=0), "not 0"),
                      (multi("aba", "M", A, 3), "['a'] are given twice"),
                      (multi("", "M", A, 4), "at least one name")):
        [r] = s.handle(ev)
        assert words in r.header["refused"], r
    assert "MultiLock ['a', 'b']" in s.handle(multi("ab", "M", A, 5, num_locks=3))[0].header["refused"]
    assert s.leases == {} and s.waiting == {}
    s.handle(multi("ab", "M", A, 6))
    [r] = s.handle(multi("cb", "M", B, 7))  # a lease id used twice
    assert "taken already" in r.header["refused"]


# ----------------------------------------------------------------------------- one name space with Lock
def test_a_lock_held_blocks_a_multilock_over_its_name_and_the_reverse():
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "L1", A, 1))
    assert s.handle(multi("ab", "M2", B, 2)) == []
    assert replies(s.handle(multi("ab", "M3", C, 3, blocking=False))) == {3: {"acquired": False}}
    out = s.handle(Release("lock", "a", "L1", A, 4))
    assert replies(out) == {4: {"released": True}, 2: {"acquired": True, "names": ["a", "b"]}}
    # held by the MultiLock: plain Locks of either name wait, and are granted in turn after
    assert s.handle(Acquire("lock", "b", "L5", A, 5)) == []
    assert replies(s.handle(Acquire("lock", "a", "L6", C, 6, blocking=False))) == {6: {"acquired": False}}
    out = s.handle(MultiLockRelease(("a", "b"), "M2", B, 7))
    assert replies(out) == {7: {"released": True}, 5: {"acquired": True}}  # (a plain reply: no names)
    assert s.lease_count("lock", "b") == 1 and s.lease_count("lock", "a") == 0
    # a Semaphore of the same name is another thing
    assert replies(s.handle(Acquire("semaphore", "b", "S", B, 8)))[8] == {"acquired": True}


def test_a_free_name_is_kept_for_the_multilock_first_in_its_line():
    """No starvation: Locks on b keep coming, but b waits for the MultiLock that asked first."""
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", A, 1), Acquire("lock", "b", "Lb", B, 2))
    assert s.handle(multi("ab", "M", C, 3)) == []
    assert s.handle(Acquire("lock", "b", "Lb2", D, 4)) == []  # asked after M: waits behind it
    out = s.handle(Release("lock", "b", "Lb", B, 5))
    assert replies(out) == {5: {"released": True}}  # b stays free for M (which still waits for a)
    assert holder(s, "b") is None and s.stalled == {"b"}
    assert replies(s.handle(Acquire("lock", "b", "Lb3", B, 6, blocking=False))) == {6: {"acquired": False}}
    out = s.handle(Release("lock", "a", "La", A, 7))
    assert replies(out) == {7: {"released": True}, 3: {"acquired": True, "names": ["a", "b"]}}
    out = s.handle(MultiLockRelease(("a", "b"), "M", C, 8))
    assert replies(out)[4] == {"acquired": True}


def test_a_holder_the_multilock_waits_for_may_take_a_second_lock_inside_the_first():
    """A task holds a and takes b inside it while a MultiLock([a, b]) waits for that a:
    keeping b for the MultiLock would deadlock both, so the holder passes."""
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", A, 1))
    assert s.handle(multi("ab", "M", B, 2)) == []
    assert replies(s.handle(Acquire("lock", "c", "Lc", D, 3))) == {3: {"acquired": True}}
    assert s.handle(Acquire("lock", "b", "Lb?", D, 4)) == []  # D holds nothing M waits for: behind M
    assert replies(s.handle(Acquire("lock", "b", "Lb", A, 5))) == {5: {"acquired": True}}  # A: M waits for it
    s.handle(Release("lock", "b", "Lb", A, 6))
    out = s.handle(Release("lock", "a", "La", A, 7))
    assert replies(out)[2] == {"acquired": True, "names": ["a", "b"]}
    out = s.handle(MultiLockRelease(("a", "b"), "M", B, 8))
    assert replies(out)[4] == {"acquired": True}


def test_a_client_the_multilock_waits_for_through_others_passes_too():
    """M waits for a held by Y; Y waits for c held by X; X asks for b, free but kept for M:
    keeping it would close the circle M -> Y -> X -> M, so X passes."""
    X, Y, Z = Owner("x"), Owner("y"), Owner("z")
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", Y, 1), Acquire("lock", "c", "Lc", X, 2))
    assert s.handle(multi("ab", "M", Z, 3)) == []
    assert s.handle(Acquire("lock", "c", "Lc2", Y, 4)) == []  # Y waits for X
    assert replies(s.handle(Acquire("lock", "b", "Lb", X, 5))) == {5: {"acquired": True}}
    # and the order the other way round: X asks for b first, then Y starts waiting for X
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", Y, 1), Acquire("lock", "c", "Lc", X, 2))
    s.handle(multi("ab", "M", Z, 3))
    assert s.handle(Acquire("lock", "b", "Lb", X, 4)) == []  # nothing ties M to X yet
    out = s.handle(Acquire("lock", "c", "Lc2", Y, 5))  # now M waits for Y, Y for X: X's b goes
    assert replies(out) == {4: {"acquired": True}}


# ----------------------------------------------------------------------------- departures, timeouts
def test_a_holder_whose_client_leaves_releases_every_name_and_wakes_the_waiters():
    s = CoordinationState()
    s.handle(multi("abc", "M1", A, 1), multi("ab", "M2", A, 2), Acquire("lock", "c", "L3", B, 3),
             multi("ba", "M4", C, 4))
    out = s.handle(ClientGone("a"))
    assert Drop(2) in out
    assert replies(out) == {3: {"acquired": True}, 4: {"acquired": True, "names": ["b", "a"]}}
    assert [holder(s, n) for n in "abc"] == ["M4", "M4", "L3"]


def test_a_worker_that_leaves_releases_what_its_tasks_held_and_its_waiters_are_told():
    s = CoordinationState()
    s.handle(multi("ab", "M1", C, 1), multi("bc", "M2", C, 2), multi("cb", "M3", A, 3))
    out = s.handle(WorkerGone("tcp://w1:1"))
    assert replies(out) == {2: {"refused": "the worker tcp://w1:1 of this request left the cluster"},
                            3: {"acquired": True, "names": ["c", "b"]}}
    assert holder(s, "a") is None and s.waiting == {}


def test_a_timed_out_multilock_leaves_every_line_and_lets_the_next_through():
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", A, 1))
    s.handle(multi("ab", "M", B, 2), Acquire("lock", "b", "Lb", C, 3))  # b kept for M: Lb waits
    assert holder(s, "b") is None and set(s.waiting) == {2, 3}
    out = s.handle(Expire(2))
    assert replies(out) == {2: {"acquired": False}, 3: {"acquired": True}}
    assert s.handle(Expire(2)) == []


def test_an_abandoned_multilock_leaves_the_line_or_gives_back_its_grant():
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", A, 1), multi("ab", "M", B, 2))
    out = s.handle(MultiLockRelease(("a", "b"), "M", B, 3, abandon=True))  # gave up while waiting
    assert replies(out) == {2: {"acquired": False}, 3: {"released": False}} and set(s.waiting) == set()
    s.handle(Release("lock", "a", "La", A, 4), multi("ab", "M5", B, 5))
    out = s.handle(MultiLockRelease(("a", "b"), "M5", B, 6, abandon=True))  # granted, reply came too late
    assert replies(out) == {6: {"released": True}} and s.leases == {}


def test_releasing_a_multilock_not_held_says_so_naming_it():
    s = CoordinationState()
    s.handle(multi("ab", "M", A, 1))
    for ev in (MultiLockRelease(("a", "b"), "nope", A, 2), MultiLockRelease(("a", "b"), "M", B, 3),
               MultiLockRelease(("x", "y"), "M", A, 4)):
        [r] = s.handle(ev)
        assert r.header["released"] is False and "is not held under this lease" in r.header["error"], r
    assert r.header["error"].startswith("MultiLock ['x', 'y'] is not held")
    assert holder(s, "a") == holder(s, "b") == "M"  # another client cannot release it


def test_validate_finds_a_request_left_waiting_for_what_is_free():
    s = CoordinationState()
    s.handle(Acquire("lock", "a", "La", A, 1), multi("ab", "M", B, 2))
    del s.leases[("lock", "a")].holders["La"]  # freed behind the state's back: nobody granted
    with pytest.raises(AssertionError, match="stalled|waits while"):
        s.validate()
    s = CoordinationState()
    s.handle(multi("ab", "M", A, 1))
    s.leases[("lock", "a")].holders["X"] = B  # two holders of one name
    with pytest.raises(AssertionError, match="holders"):
        s.validate()


# ----------------------------------------------------------------------------- random interleavings
NAMES = "wxyz"


class Model:
    """What the replies say, kept apart from the state: who holds which name, what waits."""

    def __init__(self, s: CoordinationState, rng: random.Random):
        self.s, self.rng = s, rng
        self.wid = 0
        self.held: dict[str, str] = {}  # name -> lease
        self.leases: dict[str, tuple] = {}  # lease -> (owner, names, multi)
        self.pending: dict[int, tuple] = {}  # wid -> (lease, owner, names, need, multi)
        self.clients = {Owner("a"), Owner("b"), Owner("c", "tcp://w1:1"), Owner("d", "tcp://w1:1"),
                        Owner("e", "tcp://w2:1")}
        self.joined = 0

    def next_wid(self) -> int:
        self.wid += 1
        return self.wid

    def feed(self, *events) -> list:
        out = self.s.handle(*events)  # (validates after each)
        for inst in out:
            if isinstance(inst, Drop):
                self.pending.pop(inst.wid)
            elif isinstance(inst, Reply) and inst.wid in self.pending:
                lease, owner, names, need, is_multi = self.pending.pop(inst.wid)
                if inst.header.get("acquired"):
                    got = tuple(inst.header["names"]) if is_multi else names
                    assert len(got) == need and set(got) <= set(names), (inst, names, need)
                    for n in got:
                        assert n not in self.held, f"{n} granted to {lease} while {self.held[n]} holds it"
                        self.held[n] = lease
                    self.leases[lease] = (owner, got, is_multi)
        for name in NAMES:  # the state agrees with the replies
            assert holder(self.s, name) == self.held.get(name), (name, self.held)
        return out

    def acquire(self, owner: Owner) -> None:
        wid, lease = self.next_wid(), f"L{self.wid}"
        blocking = self.rng.random() < 0.85
        if self.rng.random() < 0.35:
            name = self.rng.choice(NAMES)
            self.pending[wid] = (lease, owner, (name,), 1, False)
            self.feed(Acquire("lock", name, lease, owner, wid, blocking=blocking))
        else:
            names = tuple(self.rng.sample(NAMES, self.rng.randint(1, 3)))
            need = self.rng.choice([None, None, self.rng.randint(1, len(names))])
            self.pending[wid] = (lease, owner, names, need or len(names), True)
            self.feed(MultiLockAcquire(names, lease, owner, wid, need, blocking))

    def release(self, lease: str) -> None:
        owner, names, is_multi = self.leases.pop(lease)
        for n in names:
            del self.held[n]
        wid = self.next_wid()
        ev = (MultiLockRelease(names, lease, owner, wid) if is_multi else Release("lock", names[0], lease, owner, wid))
        assert replies(self.feed(ev))[wid] == {"released": True}

    def gone(self, owner: Owner, worker: bool, newcomer: bool = True) -> None:
        if worker:
            gone = {o for o in self.clients if o.worker == owner.worker}
            ev = WorkerGone(owner.worker)
        else:
            gone = {owner}
            ev = ClientGone(owner.client)
        for lease, (o, names, _) in list(self.leases.items()):
            if o in gone:
                del self.leases[lease]
                for n in names:
                    del self.held[n]
        self.clients -= gone
        if newcomer:
            self.joined += 1
            self.clients.add(Owner(f"new{self.joined}", self.rng.choice([None, "tcp://w3:1"])))
        self.feed(ev)

    def step(self) -> None:
        r = self.rng.random()
        if r < 0.45:
            self.acquire(self.rng.choice(sorted(self.clients, key=str)))
        elif r < 0.75 and self.leases:
            self.release(self.rng.choice(sorted(self.leases)))
        elif r < 0.85 and self.pending:
            wid = self.rng.choice(sorted(self.pending))
            if self.rng.random() < 0.5:
                self.feed(Expire(wid))
            else:  # the caller gave up: it releases the lease it asked for
                lease, owner, names, _, is_multi = self.pending[wid]
                w2 = self.next_wid()
                self.feed(MultiLockRelease(names, lease, owner, w2, abandon=True) if is_multi else
                          Release("lock", names[0], lease, owner, w2, abandon=True))
        elif r < 0.9:
            wid = self.next_wid()  # a release of what is not held: refused, nothing changes
            [rep] = self.s.handle(MultiLockRelease(("w", "x"), "nobody", Owner("a"), wid))
            assert rep.header["released"] is False and "MultiLock ['w', 'x']" in rep.header["error"]
        elif r < 0.97:
            self.gone(self.rng.choice(sorted(self.clients, key=str)), worker=False)
        else:
            owner = self.rng.choice(sorted(self.clients, key=str))
            if owner.worker:
                self.gone(owner, worker=True)

    def drain(self) -> None:
        """Holders let go, but a client only while none of its lock requests waits (a task
        holding a lock and waiting for another keeps the first until it gets the second).
        Whatever still waits then must be a deadlock of the requesters' own making: a circle
        of clients each waiting for a name another holds."""
        while True:
            waiting_clients = {o.client for (_, o, _, _, _) in self.pending.values()}
            free_to_go = sorted(lease for lease, (o, _, _) in self.leases.items() if o.client not in waiting_clients)
            if not free_to_go:
                break
            self.release(self.rng.choice(free_to_go))
        if self.pending:
            edges = {}
            for lease, o, names, _, _ in self.pending.values():
                for n in names:
                    if n in self.held:
                        edges.setdefault(o.client, set()).add(self.leases[self.held[n]][0].client)
            assert _has_cycle(edges), f"requests wait without a deadlock of their own: {self.pending}, {self.held}"


def _has_cycle(edges: dict) -> bool:
    state: dict = {}

    def visit(v) -> bool:
        state[v] = "open"
        for u in edges.get(v, ()):
            if state.get(u) == "open" or (u not in state and visit(u)):
                return True
        state[v] = "done"
        return False

    return any(v not in state and visit(v) for v in list(edges))


@pytest.mark.parametrize("seed", range(300))
def test_random_interleavings_keep_one_holder_per_name_and_never_deadlock_by_themselves(seed):
    rng = random.Random(seed)
    m = Model(CoordinationState(), rng)
    for _ in range(rng.randint(20, 120)):
        m.step()
    m.drain()
    for owner in sorted(m.clients, key=str):  # everyone leaves: nothing is kept
        m.gone(owner, worker=False, newcomer=False)
    assert m.s.leases == {} and m.s.waiting == {} and m.s.stalled == set()


def test_the_random_check_sees_two_holders_of_one_name():
    """The model fails when the state grants a name twice (so the test above can fail)."""

    class Broken(CoordinationState):
        def _available(self, w, closures):  # every name free, held or not
            return list(w.names)

        def validate(self):
            pass

    m = Model(Broken(), random.Random(0))
    m.acquire(Owner("a"))
    with pytest.raises(AssertionError, match="while"):
        for _ in range(50):
            m.acquire(Owner("b"))
