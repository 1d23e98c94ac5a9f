/* Fork-join rounds that wait for their slowest worker.
 *
 * The main thread runs ROUNDS rounds; each round creates four threads and
 * joins them all: one "slow" worker doing 6 ms of its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID, so waiting for a CPU stretches the wall time,
 * not the work) and three "worker"s doing 2 ms each (an argument sets the
 * slow worker's work in us instead of 6000: `./forkjoin 3000` is the slow
 * worker 2x faster, for real, the really-changed variant a what-if is
 * compared with). The threads are created anew each round, so every round's
 * slow worker has its own tid. On 2 CPUs the four workers contend for the
 * CPUs at the start of a round; once the workers are done the slow worker
 * runs alone. critpath should find the slow workers' running (and their
 * waits for a CPU, blamed on the workers) on the critical path, the main
 * thread blocked in pthread_join, and a what-if that speeds up every thread
 * named slow predicts the changed run.
 *
 * Each thread function spins in a loop of its own (not a shared helper), so
 * that a line-based profiler such as Coz can select the slow worker's work
 * alone.
 *
 *   cc -O2 -pthread -o forkjoin forkjoin.c
 *   critpath record -o forkjoin.data -- ./forkjoin
 *   ./forkjoin 3000                     (the slow worker 2x faster, for real)
 *   critpath analyze forkjoin.data
 *   critpath whatif forkjoin.data --speedup 'slow:*:running=2'
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 30
#define WORKERS 3
#define WORKER_US 2000

/* The slow worker's CPU time per round (us): 6000, or the first argument. */
static long slow_us = 6000;

static volatile unsigned long sink;

static long cpu_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

static void *slow(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "slow");
    long a = cpu_us();
    do {
        for (int i = 0; i < 1000; i++) sink += i;
    } while (cpu_us() - a < slow_us);
    return NULL;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    long a = cpu_us();
    do {
        for (int i = 0; i < 1000; i++) sink += i;
    } while (cpu_us() - a < WORKER_US);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1 && atol(argv[1]) > 0)
        slow_us = atol(argv[1]);
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t s, w[WORKERS];
        pthread_create(&s, NULL, slow, NULL);
        for (int k = 0; k < WORKERS; k++)
            pthread_create(&w[k], NULL, worker, NULL);
        pthread_join(s, NULL);
        for (int k = 0; k < WORKERS; k++)
            pthread_join(w[k], NULL);
    }
    printf("forkjoin: %d rounds, slow %ld us, %d workers %d us\n", ROUNDS, slow_us,
           WORKERS, WORKER_US);
    return 0;
}
