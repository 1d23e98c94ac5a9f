/* critpath.h: annotations for critpath (docs/event-model.md), one header, no library.
 *
 *   cp_begin_sm("request");           a state machine begins on this thread
 *   cp_state("parse");                it enters a state
 *   cp_wait("idle", "producer", "produced");   it waits for another SM's state
 *   cp_wait("idle", NULL, NULL);      an open wait: only a cp_recv ends it
 *   cp_send(id);  cp_recv(id, "process");      a causal link by a 64-bit id
 *   cp_end_sm("request");             the state machine ends
 *   cp_flush();                       write this thread's buffer now
 *
 * Events go to a per-thread buffer (no locks on the hot path) that is
 * appended to the file named by CRITPATH_OUT in one write() when full, when
 * the thread exits and when the process exits. At process exit the threads
 * still running have their complete events written too (each event is
 * published by a release store once whole; an event being recorded at that
 * moment, and any recorded after, is left out). Each thread's last event
 * says when it exited (or the process did while it ran): read alone, the
 * file ends there the SMs still begun on it. With CRITPATH_OUT unset every
 * call is one predictable branch. `critpath record` sets CRITPATH_OUT and
 * merges the annotations with the kernel's events (same CLOCK_MONOTONIC
 * clock); `critpath analyze FILE` also reads the file alone. With
 * CRITPATH_CALIBRATE=1 (`critpath record --calibrate`) each process measures
 * its own cost per event and writes it to the trace for
 * `critpath analyze --correct-overhead` (about 2 ms, in the first call).
 *
 * Where <sys/sdt.h> exists (define CRITPATH_NO_USDT to opt out) every call
 * also fires a USDT probe `critpath:<verb>`.
 *
 * Ids are any 64-bit integer. A NULL name is written as "" (a NULL on_sm
 * of cp_wait is an open wait). Names longer than 1024 bytes are cut before
 * the UTF-8 character that byte 1024 falls in (a cut name stays UTF-8; a
 * name that is no UTF-8 is written as the bytes it is).
 * The file format is described in docs/formats.md ("Annotation files")
 * and read by crates/readers/src/annot.rs.
 */
#ifndef CRITPATH_H
#define CRITPATH_H

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if !defined(CRITPATH_NO_USDT) && defined(__has_include)
#if __has_include(<sys/sdt.h>)
#include <sys/sdt.h>
#define CP__USDT 1
#endif
#endif
#ifndef CP__USDT
#define CP__PROBE1(n, a)
#define CP__PROBE2(n, a, b)
#define CP__PROBE3(n, a, b, c)
#else
#define CP__PROBE1(n, a) DTRACE_PROBE1(critpath, n, a)
#define CP__PROBE2(n, a, b) DTRACE_PROBE2(critpath, n, a, b)
#define CP__PROBE3(n, a, b, c) DTRACE_PROBE3(critpath, n, a, b, c)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CP__BUF (64 * 1024)
#define CP__MAXSTR 1024
#define CP__HDR 16
#define CP__NONE 0xffffu

enum { CP__BEGIN = 1, CP__END, CP__STATE, CP__WAIT, CP__SEND, CP__RECV,
       CP__THREAD, CP__LOST, CP__CALIB, CP__EXIT = 11 };

struct cp__tb {
    uint32_t len;   /* bytes used in data, block header included */
    uint32_t done;  /* bytes of whole events (release store by the owner) */
    uint32_t start; /* where the block's events begin */
    int busy;       /* 0 free, 1 being written, 2 closed by the exit writer */
    uint32_t tid;
    uint64_t nev;  /* events in the buffer */
    uint64_t lost; /* events dropped, said in the next block */
    uint64_t said; /* the lost count this block says */
    struct cp__tb *next;
    unsigned char data[CP__BUF];
};

/* 0: not set up yet, 1: on, 2: off. */
static int cp__mode __attribute__((unused));
static int cp__fd __attribute__((unused)) = -1;
static uint64_t cp__calib_ps __attribute__((unused));
static pthread_once_t cp__once __attribute__((unused)) = PTHREAD_ONCE_INIT;
static pthread_key_t cp__key __attribute__((unused));
static pthread_mutex_t cp__lock __attribute__((unused)) = PTHREAD_MUTEX_INITIALIZER;
static struct cp__tb *cp__all __attribute__((unused));
static __thread struct cp__tb *cp__me __attribute__((unused));
static int cp__warned __attribute__((unused));

static inline uint64_t cp__now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cp__u16(struct cp__tb *b, uint16_t v) {
    memcpy(b->data + b->len, &v, 2);
    b->len += 2;
}
static inline void cp__u64(struct cp__tb *b, uint64_t v) {
    memcpy(b->data + b->len, &v, 8);
    b->len += 8;
}
/* The length of `s` (n bytes) cut to at most CP__MAXSTR bytes, before the
 * UTF-8 character that byte CP__MAXSTR continues (at most 3 continuation
 * bytes: a name that is no UTF-8 is cut where it is). */
static inline size_t cp__cut(const char *s, size_t n) {
    if (n <= CP__MAXSTR) return n;
    n = CP__MAXSTR;
    for (int k = 0; k < 3 && ((unsigned char)s[n] & 0xc0) == 0x80; k++) n--;
    return n;
}
static inline void cp__str(struct cp__tb *b, const char *s) {
    if (!s) {
        cp__u16(b, CP__NONE);
        return;
    }
    size_t n = cp__cut(s, strlen(s));
    cp__u16(b, (uint16_t)n);
    memcpy(b->data + b->len, s, n);
    b->len += (uint32_t)n;
}

/* Starts a block: header, thread name, lost count, calibration. */
static void cp__start(struct cp__tb *b) {
    char name[17] = {0};
    b->len = CP__HDR;
    b->nev = 0;
    prctl(PR_GET_NAME, name, 0, 0, 0);
    b->data[b->len++] = CP__THREAD;
    cp__str(b, name);
    b->said = b->lost;
    if (b->lost) {
        b->data[b->len++] = CP__LOST;
        cp__u64(b, b->lost);
        b->lost = 0;
    }
    if (cp__calib_ps) {
        b->data[b->len++] = CP__CALIB;
        cp__u64(b, cp__calib_ps);
        cp__str(b, "c");
    }
    b->start = b->len;
    __atomic_store_n(&b->done, b->len, __ATOMIC_RELEASE);
}

/* Publishes the events written so far: the exit writer may write them. */
static inline void cp__done(struct cp__tb *b) {
    __atomic_store_n(&b->done, b->len, __ATOMIC_RELEASE);
}

/* Takes the buffer for a write: 1 when taken, 0 when the exit writer has
 * closed it. Held only for one write(). */
static int cp__take(struct cp__tb *b) {
    for (;;) {
        int free_ = 0;
        if (__atomic_compare_exchange_n(&b->busy, &free_, 1, 0, __ATOMIC_ACQUIRE,
                                        __ATOMIC_RELAXED))
            return 1;
        if (free_ == 2) return 0;
        sched_yield();
    }
}

/* Appends block data[0..len) with its header: 0 when it could not. */
/* Writes at h the header of a block of thread `tid` of `payload` bytes. */
static void cp__header(unsigned char *h, uint32_t payload, uint32_t tid) {
    uint32_t pid = (uint32_t)getpid();
    memcpy(h, "CPAB", 4);
    memcpy(h + 4, &payload, 4);
    memcpy(h + 8, &pid, 4);
    memcpy(h + 12, &tid, 4);
}

static int cp__put(struct cp__tb *b, uint32_t len) {
    cp__header(b->data, len - CP__HDR, b->tid);
    ssize_t w = cp__fd >= 0 ? write(cp__fd, b->data, len) : -1;
    if (w == (ssize_t)len) return 1;
    int e = w < 0 ? errno : ENOSPC;
    if (!__atomic_exchange_n(&cp__warned, 1, __ATOMIC_RELAXED))
        fprintf(stderr, "critpath: cannot write annotations to %s: %s; events are being dropped (the trace says how many)\n",
                getenv("CRITPATH_OUT"), strerror(e));
    return 0;
}

/* The owner writes its buffer (full, flushed, or its thread ends). After
 * the exit writer closed it the events are dropped: the process is ending. */
static void cp__write(struct cp__tb *b) {
    if (b->nev == 0) return;
    if (!cp__take(b)) {
        b->len = b->start;
        b->nev = 0;
        return;
    }
    if (!cp__put(b, b->len)) b->lost += b->nev + b->said; /* its count is lost too */
    cp__start(b);
    __atomic_store_n(&b->busy, 0, __ATOMIC_RELEASE);
}

/* The thread's exit, its buffer's last event: the SMs still begun on it
 * end there. */
static void cp__thread_exit(void *p) {
    struct cp__tb *b = (struct cp__tb *)p;
    if (b->len + 9 > CP__BUF) cp__write(b);
    b->data[b->len++] = CP__EXIT;
    cp__u64(b, cp__now());
    b->nev++;
    cp__done(b);
    cp__write(b);
    pthread_mutex_lock(&cp__lock);
    for (struct cp__tb **q = &cp__all; *q; q = &(*q)->next)
        if (*q == b) {
            *q = b->next;
            break;
        }
    pthread_mutex_unlock(&cp__lock);
    if (cp__me == b) cp__me = NULL;
    free(b);
}

/* At process exit: writes every buffer's whole events (other threads may
 * still be recording), then a block of the thread's exit (the process
 * ends it), and closes the buffer for good. */
static void cp__exit(void) {
    __atomic_store_n(&cp__mode, 2, __ATOMIC_RELEASE); /* later calls do nothing */
    uint64_t t = cp__now();
    unsigned char blk[CP__HDR + 9];
    blk[CP__HDR] = CP__EXIT;
    memcpy(blk + CP__HDR + 1, &t, 8);
    pthread_mutex_lock(&cp__lock);
    for (struct cp__tb *b = cp__all; b; b = b->next) {
        if (!cp__take(b)) continue;
        uint32_t done = __atomic_load_n(&b->done, __ATOMIC_ACQUIRE);
        if (done > b->start) cp__put(b, done);
        cp__header(blk, 9, b->tid);
        if (cp__fd >= 0 && write(cp__fd, blk, sizeof blk) != (ssize_t)sizeof blk) { /* dropped */ }
        __atomic_store_n(&b->busy, 2, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&cp__lock);
}

static void cp__after_fork(void) {
    /* The child has only this thread: forget the parent's buffers. */
    cp__all = NULL;
    pthread_mutex_init(&cp__lock, NULL);
    if (cp__me) {
        cp__me->tid = (uint32_t)syscall(SYS_gettid);
        cp__me->next = NULL;
        cp__me->lost = 0;
        cp__me->busy = 0;
        cp__start(cp__me);
        cp__all = cp__me;
        pthread_setspecific(cp__key, cp__me);
    }
}

static struct cp__tb *cp__buf(void);
static void cp__calibrate(void);

static void cp__init(void) {
    const char *out = getenv("CRITPATH_OUT");
    if (!out || !*out) {
        __atomic_store_n(&cp__mode, 2, __ATOMIC_RELEASE);
        return;
    }
    cp__fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (cp__fd < 0) {
        fprintf(stderr, "critpath: cannot open CRITPATH_OUT=%s: %s; annotations are off\n", out,
                strerror(errno));
        __atomic_store_n(&cp__mode, 2, __ATOMIC_RELEASE);
        return;
    }
    pthread_key_create(&cp__key, cp__thread_exit);
    pthread_atfork(NULL, NULL, cp__after_fork);
    atexit(cp__exit);
    const char *cal = getenv("CRITPATH_CALIBRATE");
    if (cal && *cal && strcmp(cal, "0") != 0) cp__calibrate();
    __atomic_store_n(&cp__mode, 1, __ATOMIC_RELEASE);
}

static struct cp__tb *cp__new(void) {
    struct cp__tb *b = (struct cp__tb *)malloc(sizeof *b);
    if (!b) return NULL;
    b->tid = (uint32_t)syscall(SYS_gettid);
    b->lost = 0;
    b->busy = 0;
    cp__start(b);
    return b;
}

static inline struct cp__tb *cp__buf(void) {
    if (__builtin_expect(cp__me != NULL, 1)) return cp__me;
    struct cp__tb *b = cp__new();
    if (!b) return NULL;
    pthread_mutex_lock(&cp__lock);
    b->next = cp__all;
    cp__all = b;
    pthread_mutex_unlock(&cp__lock);
    pthread_setspecific(cp__key, b);
    cp__me = b;
    return b;
}

/* The buffer to write an event of at most `need` bytes into, or NULL when
 * annotations are off. */
static inline struct cp__tb *cp__begin(size_t need) {
    int m = __atomic_load_n(&cp__mode, __ATOMIC_ACQUIRE);
    if (__builtin_expect(m == 2, 1)) return NULL;
    if (__builtin_expect(m == 0, 0)) {
        pthread_once(&cp__once, cp__init);
        if (__atomic_load_n(&cp__mode, __ATOMIC_ACQUIRE) != 1) return NULL;
    }
    struct cp__tb *b = cp__buf();
    if (!b) return NULL;
    if (__builtin_expect(b->len + need > CP__BUF, 0)) cp__write(b);
    return b;
}

static inline size_t cp__slen(const char *s) {
    size_t n = s ? strlen(s) : 0;
    return n > CP__MAXSTR ? CP__MAXSTR : n;
}

static inline void cp__named(struct cp__tb *b, int kind, const char *s) {
    b->data[b->len++] = (unsigned char)kind;
    cp__u64(b, cp__now());
    cp__str(b, s ? s : "");
    b->nev++;
    cp__done(b);
}

static inline void cp_begin_sm(const char *name) {
    CP__PROBE1(begin_sm, name);
    struct cp__tb *b = cp__begin(11 + cp__slen(name));
    if (b) cp__named(b, CP__BEGIN, name);
}

static inline void cp_end_sm(const char *name) {
    CP__PROBE1(end_sm, name);
    struct cp__tb *b = cp__begin(11 + cp__slen(name));
    if (b) cp__named(b, CP__END, name);
}

static inline void cp_state(const char *name) {
    CP__PROBE1(state, name);
    struct cp__tb *b = cp__begin(11 + cp__slen(name));
    if (b) cp__named(b, CP__STATE, name);
}

static inline void cp_wait(const char *state, const char *on_sm, const char *on_state) {
    CP__PROBE3(wait, state, on_sm, on_state);
    struct cp__tb *b = cp__begin(15 + cp__slen(state) + cp__slen(on_sm) + cp__slen(on_state));
    if (!b) return;
    b->data[b->len++] = CP__WAIT;
    cp__u64(b, cp__now());
    cp__str(b, state ? state : "");
    cp__str(b, on_sm);
    cp__str(b, on_sm ? on_state : NULL);
    b->nev++;
    cp__done(b);
}

static inline void cp_send(uint64_t id) {
    CP__PROBE1(send, id);
    struct cp__tb *b = cp__begin(17);
    if (!b) return;
    b->data[b->len++] = CP__SEND;
    cp__u64(b, cp__now());
    cp__u64(b, id);
    b->nev++;
    cp__done(b);
}

static inline void cp_recv(uint64_t id, const char *state) {
    CP__PROBE2(recv, id, state);
    struct cp__tb *b = cp__begin(19 + cp__slen(state));
    if (!b) return;
    b->data[b->len++] = CP__RECV;
    cp__u64(b, cp__now());
    cp__u64(b, id);
    cp__str(b, state ? state : "");
    b->nev++;
    cp__done(b);
}

/* Writes this thread's buffered events now (e.g. before a risky step). */
static inline void cp_flush(void) {
    if (__atomic_load_n(&cp__mode, __ATOMIC_ACQUIRE) == 1 && cp__me) cp__write(cp__me);
}

/* Measures the cost of one event on this machine, as the program will pay
 * it (clock read and buffer write), into a scratch buffer never written. */
static void cp__calibrate(void) {
    struct cp__tb *b = cp__new();
    if (!b) return;
    enum { N = 20000 };
    uint64_t best = UINT64_MAX;
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = cp__now();
        for (int i = 0; i < N; i++) {
            if (b->len + 32 > CP__BUF) b->len = CP__HDR;
            cp__named(b, CP__STATE, (i & 1) ? "calibrate-a" : "calibrate-b");
        }
        uint64_t d = cp__now() - t0;
        if (d < best) best = d;
    }
    free(b);
    cp__calib_ps = best * 1000 / N;
    if (!cp__calib_ps) cp__calib_ps = 1;
}

#ifdef __cplusplus
}
#endif
#endif /* CRITPATH_H */
