"""A deterministic scheduler of actor threads: only one actor runs between two storage calls.

Every actor is a thread. Each storage call it makes (see storage.py) is a *scheduling point*:
the actor parks there until the controller grants it, then runs alone until its next point.
Which actor moves, and which fault (if any) its call gets, is decided by a policy from a
`random.Random(seed)` (or a script), so a seed replays the same interleaving and the same
faults. This is what FoundationDB's simulation and TigerBeetle's VOPR do with a whole cluster;
here the "cluster" is a handful of committers and maintainers sharing one table root.
"""
from __future__ import annotations

import random
import threading
import traceback
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

_tls = threading.local()

#: How long the controller waits for the running actor to reach its next point. Only a bug in
#: the harness (an actor blocked on something that is not a storage call) can exceed it.
STUCK_SECONDS = 60.0


class Fault:
    BEFORE = "before"     # the call fails before it has any effect
    AFTER = "after"       # the call takes effect, then fails: a lost reply
    UNSUPPORTED = "501"   # the store answers 501 Not Implemented (conditional create)
    INTERRUPT = "interrupt"   # KeyboardInterrupt (Ctrl-C) before the call: the process stops
    #: A delete that takes effect, then its reply is lost (a FileIO delete then reports the
    #: file as not deleted, its contract; an obstore or pyarrow.fs delete raises). Drawn only
    #: where a policy's faults name it, so that other seeds draw as before.
    LOST_DELETE = "lost-delete"


@dataclass(frozen=True)
class Call:
    """One storage call: its level ('io' = FileIO method, 'fs' = pyarrow.fs primitive,
    'obj' = obstore request), method and path; `create` marks a conditional create."""
    level: str
    method: str
    path: str = ""
    create: bool = False

    def __str__(self) -> str:
        short = "/".join(self.path.rsplit("/", 2)[-2:])
        return f"{self.level}.{self.method}({short}{', create' if self.create else ''})"


@dataclass
class _Actor:
    name: str
    thread: Optional[threading.Thread] = None
    call: Optional[Call] = None        # the point it is parked at (None: running or done)
    granted: bool = False
    fault: Optional[str] = None
    done: bool = False
    result: object = None
    error: Optional[BaseException] = None
    tb: str = ""
    start_tick: int = 0
    end_tick: int = 0


class HarnessError(AssertionError):
    """The harness itself failed (an actor stuck outside a storage call)."""


class Policy:
    """Chooses the next actor among those parked, and the fault of its call."""

    def choose(self, sched: "Scheduler", parked: List[_Actor]) -> "tuple[_Actor, Optional[str]]":
        raise NotImplementedError


class RandomPolicy(Policy):
    """Seeded: keeps the last actor running with probability `stickiness` (long runs with
    rare preemptions find more than a coin flip per call), and fails a call with
    probability `fault_rate` (kind chosen by what the call can suffer)."""

    def __init__(self, seed: int, fault_rate: float = 0.02, stickiness: float = 0.6,
                 faults=(Fault.BEFORE, Fault.AFTER, Fault.UNSUPPORTED),
                 priorities: bool = False):
        self.rng = random.Random(seed)
        self.fault_rate = fault_rate
        self.stickiness = stickiness
        self.faults = faults
        # With `priorities`, actors are scheduled by priority (PCT, probabilistic concurrency
        # testing):
        # the highest-priority actor runs, and now and then the running one drops to the
        # lowest priority. That makes *slow* actors, parked for a whole operation of the
        # others (a commit that publishes after two others and an expiration did).
        self.priorities = priorities
        self._prio: Dict[str, float] = {}

    def _pick(self, sched, parked):
        if self.priorities:
            for a in parked:
                if a.name not in self._prio:
                    self._prio[a.name] = self.rng.random()
            last = sched.actors.get(sched.last) if sched.last is not None else None
            if last is not None and last.name in self._prio and not last.done:
                # Drop more often right before a publish: the races that matter are there.
                odds = 0.2 if _publishes(last.call) else 0.01
                if self.rng.random() < odds:
                    self._prio[last.name] = min(self._prio.values()) - 1.0
            return max(parked, key=lambda a: self._prio[a.name])
        last = sched.last
        if last is not None and self.rng.random() < self.stickiness:
            pick = next((a for a in parked if a.name == last), None)
            if pick is not None:
                return pick
        return self.rng.choice(parked)

    def choose(self, sched, parked):
        pick = self._pick(sched, parked)
        fault = None
        kinds = [k for k in fault_kinds(pick.call) if k in self.faults]
        if kinds and self.rng.random() < self.fault_rate:
            fault = self.rng.choice(kinds)
        return pick, fault


def _publishes(call: Optional[Call]) -> bool:
    """The step that makes a snapshot visible (or the check right before it)."""
    return call is not None and "snapshot-" in call.path and (
        call.create or call.method in ("try_create_atomic", "move"))


def fault_kinds(call: Optional[Call]) -> List[str]:
    """The faults a call can get. Reads fail before; writes and creates also after their
    effect; conditional creates on the object store may answer 501; FileIO deletes fail
    before (their contract: False, no exception). The `start` point and the atomicity probe
    get none, nor does an actor waiting for another (`storage.controlled_commit_waits`).
    A FileIO write (any `io` call that writes or creates) may also be interrupted
    (KeyboardInterrupt raised before it: an operation stopped by Ctrl-C between two calls),
    only where a policy's `faults` name Fault.INTERRUPT (the kinds a policy draws from are
    these, filtered: without it, a seed draws as before)."""
    if call is None or call.method in ("start", "check_atomic_create", "link_time_ns",
                                       "wait"):
        return []
    m = call.method
    if call.level == "obj" and m == "put" and call.create:
        return [Fault.BEFORE, Fault.AFTER, Fault.UNSUPPORTED]
    if m in ("write_new", "overwrite_atomic", "try_create_atomic", "put", "move",
             "open_output_stream"):
        if call.level == "io":
            return [Fault.BEFORE, Fault.AFTER, Fault.INTERRUPT]
        return [Fault.BEFORE, Fault.AFTER]
    if m.startswith("delete"):   # (LOST_DELETE only where a policy names it)
        return [Fault.BEFORE, Fault.LOST_DELETE]
    return [Fault.BEFORE]


class Scheduler:
    def __init__(self, policy: Policy, log: Optional[Callable[[str], None]] = None):
        self.policy = policy
        self.cond = threading.Condition()
        self.actors: Dict[str, _Actor] = {}
        self.running: Optional[str] = None
        self.last: Optional[str] = None
        self.tick = 0
        self.trace: List[str] = []
        self.unscheduled: List[str] = []   # storage calls from threads that are no actor
        self._log = log
        # Called with the chosen actor before each policy step grants it (the simulation's
        # actions between two calls, e.g. the lease clock jumping while others are paused).
        self.before_step: Optional[Callable[["Scheduler", _Actor], None]] = None

    # --- called from actor threads -----------------------------------------------------
    def point(self, call: Call) -> Optional[str]:
        """Park the calling actor until it is granted; the fault its call gets. Threads
        that are not actors pass straight through (the checker's plain reads)."""
        name = getattr(_tls, "actor", None)
        if name is None or getattr(_tls, "sched", None) is not self:
            if threading.current_thread() is not threading.main_thread():
                self.unscheduled.append(f"{threading.current_thread().name}: {call}")
            return None
        with self.cond:
            a = self.actors[name]
            a.call, a.granted = call, False
            self.running = None
            self.cond.notify_all()
            while not a.granted:
                self.cond.wait()
            a.call, a.granted = None, False
            fault, a.fault = a.fault, None
            return fault

    # --- the controller ----------------------------------------------------------------
    def spawn(self, name: str, fn: Callable[[], object]) -> _Actor:
        if name in self.actors and not self.actors[name].done:
            raise ValueError(f"actor {name} is still running")
        a = _Actor(name)
        self.actors[name] = a

        def body():
            _tls.actor, _tls.sched = name, self
            self.point(Call("sim", "start"))
            a.start_tick = self.tick
            try:
                a.result = fn()
            except BaseException as e:  # noqa: BLE001 - the outcome is data for the checker
                a.error = e
                a.tb = traceback.format_exc()
            finally:
                with self.cond:
                    a.done, a.end_tick = True, self.tick
                    self.running = None
                    self.cond.notify_all()

        a.thread = threading.Thread(target=body, name=f"actor-{name}", daemon=True)
        with self.cond:
            self.running = name   # until it parks at its start point
        a.thread.start()
        self._wait_idle()
        return a

    def spawn_child(self, name: str, fn: Callable[[], object]) -> _Actor:
        """From inside an actor: a new actor (a pool thread of that actor's operation) parked
        at its start point. The calling actor keeps running (the controller waits for it to
        park, so the child cannot move before a policy step grants it)."""
        with self.cond:
            if name in self.actors and not self.actors[name].done:
                raise ValueError(f"actor {name} is still running")
            a = _Actor(name, call=Call("sim", "start"))
            self.actors[name] = a

        def body():
            _tls.actor, _tls.sched = name, self
            with self.cond:
                while not a.granted:
                    self.cond.wait()
                a.call, a.granted, a.fault = None, False, None
            a.start_tick = self.tick
            try:
                a.result = fn()
            except BaseException as e:  # noqa: BLE001 - handed to the future by `fn`
                a.error = e
                a.tb = traceback.format_exc()
            finally:
                with self.cond:
                    a.done, a.end_tick = True, self.tick
                    self.running = None
                    self.cond.notify_all()

        a.thread = threading.Thread(target=body, name=f"actor-{name}", daemon=True)
        a.thread.start()
        return a

    def _wait_idle(self) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.running is None, timeout=STUCK_SECONDS):
                raise HarnessError(f"actor {self.running} did not reach a storage call within "
                                   f"{STUCK_SECONDS} s (blocked outside the storage?)")

    def parked(self) -> List[_Actor]:
        return [a for a in self.actors.values() if not a.done and a.call is not None]

    def step(self) -> bool:
        """Grant one parked actor (policy's choice); False when no actor is left."""
        self._wait_idle()
        parked = self.parked()
        if not parked:
            return False
        a, fault = self.policy.choose(self, parked)
        if self.before_step is not None:
            self.before_step(self, a)
        self.grant(a.name, fault)
        return True

    def note(self, what: str) -> None:
        """An action of the simulation, in the trace (`tick ACTION what`)."""
        with self.cond:
            self.trace.append(f"{self.tick} ACTION {what}")
            if self._log:
                self._log(self.trace[-1])

    def grant(self, name: str, fault: Optional[str] = None) -> Call:
        self._wait_idle()
        with self.cond:
            a = self.actors[name]
            if a.done or a.call is None:
                raise HarnessError(f"actor {name} is not parked")
            call = a.call
            self.tick += 1
            entry = f"{self.tick} {name} {call}" + (f" FAULT={fault}" if fault else "")
            self.trace.append(entry)
            if self._log:
                self._log(entry)
            a.fault, a.granted = fault, True
            self.running = self.last = name
            self.cond.notify_all()
        self._wait_idle()
        return call

    def run_all(self, max_steps: int = 200_000) -> None:
        """Step until every actor is done."""
        for _ in range(max_steps):
            if not self.step():
                return
        raise HarnessError(f"more than {max_steps} scheduling steps: a livelock?")

    def next_call(self, name: str) -> Optional[Call]:
        self._wait_idle()
        a = self.actors[name]
        return None if a.done else a.call

    def finish(self, name: str) -> None:
        """Run one actor alone until it is done."""
        while self.next_call(name) is not None:
            self.grant(name)

    def run_until(self, name: str, pred: Callable[[Call], bool], fault: Optional[str] = None,
                  ) -> Optional[Call]:
        """Run one actor alone until it is parked at a call matching `pred` (not granted);
        with `fault`, that call is granted with the fault. None if the actor finished first
        (a fixed storage may refuse before the call a script waits for: the script goes on,
        and the checker judges the outcome)."""
        while True:
            call = self.next_call(name)
            if call is None:
                return None
            if pred(call):
                if fault is not None:
                    self.grant(name, fault)
                return call
            self.grant(name)
