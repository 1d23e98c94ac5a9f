/* A busy thread that burns CPU off the critical path.
 *
 * "worker" does 100 ms of work (its own CPU time) that the main thread waits for; "burner",
 * a background thread nobody waits for, spins on another CPU for as long
 * (until the process exits). A CPU profiler ranks both alike; critpath
 * puts the worker on the critical path and gives the burner ~0
 * criticality.
 *
 *   cc -O2 -pthread -o busy busy.c
 *   critpath record -o busy.data -- ./busy
 *   critpath analyze busy.data
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static long cpu_us(struct timespec a) {
    struct timespec b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    return (b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000;
}

static void *worker(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "worker");
    struct timespec a;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    while (cpu_us(a) < 100000)
        for (int i = 0; i < 1000; i++) sink += i;
    return NULL;
}

static void *burner(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "burner");
    for (;;)
        for (int i = 0; i < 1000; i++) sink += i;
    return NULL;
}

int main(void) {
    pthread_t w, b;
    pthread_create(&b, NULL, burner, NULL);
    pthread_create(&w, NULL, worker, NULL);
    pthread_join(w, NULL);
    printf("busy: done\n");
    /* Returning ends the process, burner included. */
    return 0;
}
