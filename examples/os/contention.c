/* CPU contention: a chain of work competing with two CPU hogs.
 *
 * "chain" does 40 items of 4 ms of its own CPU time (CLOCK_THREAD_CPUTIME_ID,
 * so waiting for a CPU stretches the wall time, not the work), sleeping
 * 0.5 ms between items. Two "hog" threads spin at the same priority until
 * chain is done (the process exits when the main thread has joined chain).
 * On 2 CPUs chain waits for a CPU a good part of the time: critpath blames
 * that runnable time on the hogs that held the CPU, and a what-if that
 * removes the hogs predicts the run without them.
 *
 *   cc -O2 -pthread -o contention contention.c
 *   critpath record -o contention.data -- ./contention          (with hogs)
 *   critpath record -o alone.data -- ./contention nohogs        (without)
 *   ./contention hogs 2000                 (chain's work 2x faster, for real)
 *   critpath analyze contention.data
 *   critpath whatif contention.data --speedup hog:TID:running=1e9 ...
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ITEMS 40

/* Each item's CPU time (us): 4000, or the program's second argument (a
 * what-if's real counterpart: `./contention hogs 2000` is chain 2x
 * faster). */
static long item_us = 4000;

static volatile unsigned long sink;

static long cpu_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000L + t.tv_nsec / 1000;
}

static void *hog(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "hog");
    for (;;)
        for (int i = 0; i < 1000; i++) sink += i;
    return NULL;
}

static void *chain(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "chain");
    for (int k = 0; k < ITEMS; k++) {
        long a = cpu_us();
        while (cpu_us() - a < item_us)
            for (int i = 0; i < 100; i++) sink += i;
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 500000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int hogs = !(argc > 1 && strcmp(argv[1], "nohogs") == 0);
    if (argc > 2 && atol(argv[2]) > 0)
        item_us = atol(argv[2]);
    pthread_t h1, h2, c;
    if (hogs) {
        pthread_create(&h1, NULL, hog, NULL);
        pthread_create(&h2, NULL, hog, NULL);
    }
    pthread_create(&c, NULL, chain, NULL);
    pthread_join(c, NULL);
    printf("contention: %d items, %s\n", ITEMS, hogs ? "2 hogs" : "no hogs");
    /* Returning ends the process, the hogs included. */
    return 0;
}
