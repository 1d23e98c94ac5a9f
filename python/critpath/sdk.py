"""Annotate a Python program for critpath (docs/event-model.md).

    from critpath import sdk

    with sdk.sm("request"):          # begin_sm / end_sm
        with sdk.state("parse"):     # enters "parse"; back to the state before on exit
            ...
        sdk.wait("idle")             # an open wait: only a recv ends it
        sdk.recv(42, "process")
        sdk.send(43)

The verbs are those of ``sdk/c/critpath.h``: ``begin_sm``, ``end_sm``,
``state``, ``wait(state, on_sm=None, on_state=None)``, ``send(id)``,
``recv(id, state)``, ``flush()``. Every thread, and every asyncio task,
has its own SM stack. Events go to a per-thread buffer appended to the file
named by ``CRITPATH_OUT`` in one ``write`` when full, when the thread ends
and at interpreter exit, each thread's last one saying when it ended (the SMs
still begun on it end there); with ``CRITPATH_OUT`` unset every call returns at
once (after checking the names and ids, as when recording). Names are
``str``: anything else raises a TypeError, whether recording or not (None
only for wait's ``on_sm`` and ``on_state``). A name longer than 1024 bytes
in UTF-8 is cut at the last character boundary within them. With
``CRITPATH_CALIBRATE=1`` the process measures its cost per event and
writes it to the trace for ``critpath analyze --correct-overhead``.
The file format is described in ``docs/formats.md`` ("Annotation files")
and read by ``crates/readers/src/annot.rs``.
"""

import atexit
import operator
import os
import struct
import sys
import threading
import time
import weakref

__all__ = [
    "begin_sm", "end_sm", "state", "wait", "send", "recv", "flush", "sm", "calibrate",
]

_BUF = 64 * 1024
_MAXSTR = 1024
_BEGIN, _END, _STATE, _WAIT, _SEND, _RECV, _THREAD, _LOST, _CALIB, _TASK, _EXIT = range(1, 12)

_path = os.environ.get("CRITPATH_OUT") or None
_fd = None
_lock = threading.Lock()
# Live buffers, for the flush at exit; a thread's buffer is written when the
# thread ends and its thread-local data goes.
_buffers = weakref.WeakSet()
_calib_ps = 0
_warned = False
_now = time.monotonic_ns  # CLOCK_MONOTONIC, the clock critpath record gives perf
_pack_t = struct.Struct("<BQ").pack
_pack_tq = struct.Struct("<BQQ").pack
_local = threading.local()

try:
    from asyncio import current_task as _current_task_fn
    import asyncio as _asyncio

    def _current_task():
        # Only inside a running event loop.
        if _asyncio._get_running_loop() is None:
            return None
        return _current_task_fn()
except Exception:  # pragma: no cover
    def _current_task():
        return None


_encoded = {}


def _cut(b):
    """UTF-8 bytes ``b`` cut to at most _MAXSTR bytes, at a character
    boundary (never inside a character)."""
    if len(b) <= _MAXSTR:
        return b
    n = _MAXSTR
    while b[n] & 0xC0 == 0x80:  # b[n] continues the character before it
        n -= 1
    return b[:n]


def _s(name):
    """A name (a str, or None for "none") as the file spells it (length
    and bytes), cached."""
    e = _encoded.get(name)
    if e is None:
        if name is None:
            e = b"\xff\xff"
        else:
            b = _cut(name.encode("utf-8", "replace"))
            e = struct.pack("<H", len(b)) + b
        if len(_encoded) < 100000:
            _encoded[name] = e
    return e


class _Buffer:
    __slots__ = ("parts", "size", "events", "lost", "said", "tid", "pid", "gen", "task",
                 "stacks", "scratch", "exited", "__weakref__")

    def __init__(self, scratch=False):
        self.scratch = scratch
        self.exited = False
        self.tid = threading.get_native_id()
        self.pid = os.getpid()
        self.gen = _gen
        self.lost = 0
        # The current state of each SM stack (thread or task), for
        # ``with state(...)``: key -> list of [sm, state].
        self.stacks = {}
        self._start()

    def _start(self):
        name = threading.current_thread().name
        self.parts = [bytes([_THREAD]) + _s(name)]
        self.said = self.lost  # lost again if this block is
        if self.lost:
            self.parts.append(struct.pack("<BQ", _LOST, self.lost))
            self.lost = 0
        if _calib_ps:
            self.parts.append(struct.pack("<BQ", _CALIB, _calib_ps) + _s("python"))
        self.size = sum(len(p) for p in self.parts)
        self.events = 0
        self.task = 0

    def write(self):
        global _warned
        if not self.events or self.scratch:
            self._start()
            return
        payload = b"".join(self.parts)
        block = b"CPAB" + struct.pack("<III", len(payload), self.pid, self.tid) + payload
        try:
            if _fd is None:
                raise OSError("CRITPATH_OUT is not open")
            n = os.write(_fd, block)
            if n != len(block):
                raise OSError("short write (disk full?)")
        except OSError as e:
            self.lost += self.events + self.said
            if not _warned:
                _warned = True
                sys.stderr.write(
                    "critpath: cannot write annotations to %s: %s; events are being dropped "
                    "(the trace says how many)\n" % (_path, e))
        self._start()

    def exit(self, t):
        """The thread ended at ``t`` (or the process does while it runs):
        the SMs still begun on it end there. Written once, with the rest."""
        if self.exited or self.scratch or self.gen != _gen:
            return
        self.exited = True
        self.parts.append(_pack_t(_EXIT, t))
        self.size += 9
        self.events += 1
        self.write()

    def __del__(self):
        # The thread ended (its thread-local data is gone).
        try:
            self.exit(_now())
        except Exception:
            pass

    def add(self, rec):
        self.parts.append(rec)
        self.size += len(rec)
        self.events += 1
        if self.size > _BUF:
            self.write()


def _buffer():
    b = _local.__dict__.get("b")
    if b is None or b.gen != _gen:
        b = _Buffer()
        _local.b = b
        with _lock:
            _buffers.add(b)
    # Records of an asyncio task go to the task's own stack.
    task = _current_task()
    tid = 0 if task is None else id(task)
    if tid != b.task:
        b.task = tid
        name = "" if task is None else task.get_name()
        b.parts.append(struct.pack("<BQ", _TASK, tid) + _s(name))
    return b


def _flush_all():
    # At interpreter exit: every thread still running ends now (the
    # process does); later calls do nothing, as in the C and Rust SDKs.
    global _path
    _path = None
    with _lock:
        live = list(_buffers)
    t = _now()
    for b in live:
        b.exit(t)


def _open():
    global _fd, _path
    if _path is None:
        return
    try:
        _fd = os.open(_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
    except OSError as e:
        sys.stderr.write("critpath: cannot open CRITPATH_OUT=%s: %s; annotations are off\n"
                         % (_path, e))
        _path = None
        return
    atexit.register(_flush_all)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork)


_gen = 0


def _after_fork():
    global _buffers, _gen
    _gen += 1
    _buffers = weakref.WeakSet()
    _local.__dict__.clear()


def _name(verb, arg, name, none=False):
    """``name`` checked: a TypeError naming the verb and argument unless it
    is a str (or None, where ``none`` allows it)."""
    if not isinstance(name, str) and not (none and name is None):
        raise TypeError("critpath.sdk: %s() argument %s is a str%s, not %s"
                        % (verb, arg, " or None" if none else "", type(name).__name__))


def _stack(b):
    return b.stacks.setdefault(b.task, [])


def begin_sm(name):
    """A state machine begins on this thread (or asyncio task)."""
    if type(name) is not str:
        _name("begin_sm", "name", name)
    if _path is None:
        return
    b = _buffer()
    _stack(b).append([name, "running"])
    b.add(_pack_t(_BEGIN, _now()) + _s(name))


def end_sm(name):
    """The state machine ``name`` (on top of the stack) ends."""
    if type(name) is not str:
        _name("end_sm", "name", name)
    if _path is None:
        return
    b = _buffer()
    st = _stack(b)
    for i in range(len(st) - 1, -1, -1):
        if st[i][0] == name:
            del st[i:]
            break
    b.add(_pack_t(_END, _now()) + _s(name))


def _enter(b, kind_rec, name):
    st = _stack(b)
    if st:
        st[-1][1] = name
    b.add(kind_rec)


class _StateCtx:
    __slots__ = ("name", "before")

    def __init__(self, name):
        self.name = name
        self.before = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if _path is not None and self.before is not None:
            state(self.before)
        return False


_NOOP = _StateCtx(None)


def state(name):
    """The current SM enters ``name``. As a context manager, it goes back to
    the state it was in before when the block ends."""
    if type(name) is not str:
        _name("state", "name", name)
    if _path is None:
        return _NOOP
    b = _buffer()
    st = b.stacks.get(b.task)
    ctx = _StateCtx(name)
    if st:
        ctx.before = st[-1][1]
        st[-1][1] = name
    else:
        ctx.before = "running"
    b.add(_pack_t(_STATE, _now()) + _s(name))
    return ctx


def wait(state_name, on_sm=None, on_state=None):
    """The current SM waits in ``state_name`` until SM ``on_sm`` enters
    ``on_state`` (any state when None); with ``on_sm`` None only a
    :func:`recv` ends the wait."""
    if type(state_name) is not str:
        _name("wait", "state_name", state_name)
    if on_sm is not None or on_state is not None:
        _name("wait", "on_sm", on_sm, none=True)
        _name("wait", "on_state", on_state, none=True)
    if _path is None:
        return
    b = _buffer()
    rec = (_pack_t(_WAIT, _now()) + _s(state_name) + _s(on_sm)
           + _s(on_state if on_sm is not None else None))
    _enter(b, rec, state_name)


_MAXID = (1 << 64) - 1


def _id(id):
    """``id`` as an int (any integer type), or a ValueError when it is
    outside 0..2**64-1 (a TypeError when it is no integer)."""
    try:
        i = operator.index(id)
    except TypeError:
        raise TypeError("critpath.sdk: a link id is an int, not %s" % type(id).__name__) from None
    if not 0 <= i <= _MAXID:
        raise ValueError("critpath.sdk: link id %d is outside 0..2**64-1" % i)
    return i


def _pack_id(kind, id):
    """A send's or recv's time and id; an id outside 0..2**64-1 is
    refused (struct checks it: nothing on the way of a good one)."""
    try:
        return _pack_tq(kind, _now(), id)
    except struct.error:
        return _pack_tq(kind, _now(), _id(id))


def _check_id(id):
    """With recording off: ``id`` refused as recording refuses it, so that a
    bad id shows whether the program records or not."""
    if type(id) is not int or not 0 <= id <= _MAXID:
        _id(id)


def send(id):
    """A causal link ``id`` (an int in 0..2**64-1) leaves the current state;
    another id raises a ValueError (a TypeError if it is no int), whether
    recording or not."""
    if _path is None:
        _check_id(id)
        return
    _buffer().add(_pack_id(_SEND, id))


def recv(id, state_name):
    """The current SM enters ``state_name``, depending on the send of ``id``
    (an int in 0..2**64-1; another raises a ValueError, a TypeError if it is
    no int, whether recording or not)."""
    if type(state_name) is not str:
        _name("recv", "state_name", state_name)
    if _path is None:
        _check_id(id)
        return
    b = _buffer()
    _enter(b, _pack_id(_RECV, id) + _s(state_name), state_name)


def flush():
    """Writes this thread's buffered events now."""
    if _path is None:
        return
    b = getattr(_local, "b", None)
    if b is not None:
        b.write()


class sm:
    """``with sm("request"):`` begins the SM and ends it when the block ends
    (also usable as ``begin_sm``/``end_sm`` pairs)."""

    __slots__ = ("name",)

    def __init__(self, name):
        _name("sm", "name", name)
        self.name = name

    def __enter__(self):
        begin_sm(self.name)
        return self

    def __exit__(self, *exc):
        end_sm(self.name)
        return False


def calibrate(n=5000):
    """The cost of one event here in ns: ``state()`` calls as the program
    makes them, into a scratch buffer that is never written (best of 3)."""
    global _path
    saved_path, saved = _path, _local.__dict__.get("b")
    _path = _path or "(calibration)"
    scratch = _Buffer(scratch=True)
    scratch.stacks[0] = [["calibrate", "running"]]
    _local.b = scratch
    best = None
    try:
        for _ in range(3):
            t0 = _now()
            for i in range(n):
                state("calibrate")
            d = _now() - t0
            best = d if best is None or d < best else best
    finally:
        _path = saved_path
        if saved is None:
            _local.__dict__.pop("b", None)
        else:
            _local.b = saved
    return best / n


_open()
if _path is not None and os.environ.get("CRITPATH_CALIBRATE", "0") not in ("", "0"):
    _calib_ps = int(calibrate() * 1000)
