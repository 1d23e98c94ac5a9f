/* Two threads ping-pong one byte through a pair of pipes ROUNDS times: a
 * context-switch-heavy workload for benchmarking perf.data analysis. With
 * CPU, both threads run on that CPU only: each round the woken thread
 * waits for the CPU its waker holds (a recording full of waits for a CPU).
 *
 *   cc -O2 -pthread -o pingpong pingpong.c && ./pingpong [ROUNDS [CPU]]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds = 100000;

static void *pong(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "pong");
    char c;
    for (long i = 0; i < rounds; i++) {
        if (read(ab[0], &c, 1) != 1) return NULL;
        if (write(ba[1], &c, 1) != 1) return NULL;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) rounds = atol(argv[1]);
    if (argc > 2) {
        /* Set before the second thread starts: it inherits the mask. */
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(atoi(argv[2]), &one);
        if (sched_setaffinity(0, sizeof one, &one)) {
            perror("pingpong: sched_setaffinity");
            return 1;
        }
    }
    if (pipe(ab) || pipe(ba)) return 1;
    pthread_t t;
    pthread_create(&t, NULL, pong, NULL);
    char c = 'x';
    for (long i = 0; i < rounds; i++) {
        if (write(ab[1], &c, 1) != 1) return 1;
        if (read(ba[0], &c, 1) != 1) return 1;
    }
    pthread_join(t, NULL);
    printf("pingpong: %ld rounds\n", rounds);
    return 0;
}
