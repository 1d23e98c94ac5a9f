/* A three-stage threaded pipeline whose middle stage is the bottleneck.
 *
 * stage1 makes ITEMS items (50 us of work each), stage2 transforms them
 * (300 us each), stage3 finishes them (50 us each); bounded queues of 4
 * join the stages (an argument sets stage2's work in us instead of 300: the
 * really-changed variant a what-if is compared with). The main thread waits
 * for stage3. critpath should find
 * stage2's running state on the critical path, and the other stages mostly
 * blocked waiting for it.
 *
 *   cc -O2 -pthread -o pipeline pipeline.c
 *   critpath record -o pipeline.data -- ./pipeline
 *   critpath analyze pipeline.data
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ITEMS 200
#define QCAP 4

struct queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    int items[QCAP];
    int head, len;
};

static void q_init(struct queue *q) {
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    q->head = q->len = 0;
}

static void q_put(struct queue *q, int v) {
    pthread_mutex_lock(&q->mu);
    while (q->len == QCAP) pthread_cond_wait(&q->not_full, &q->mu);
    q->items[(q->head + q->len) % QCAP] = v;
    q->len++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

static int q_get(struct queue *q) {
    pthread_mutex_lock(&q->mu);
    while (q->len == 0) pthread_cond_wait(&q->not_empty, &q->mu);
    int v = q->items[q->head];
    q->head = (q->head + 1) % QCAP;
    q->len--;
    pthread_cond_signal(&q->not_full);
    pthread_mutex_unlock(&q->mu);
    return v;
}

/* Burns the CPU for `us` microseconds of the thread's own CPU time (work,
 * not sleep): the same work on a loaded machine. */
static volatile unsigned long sink;
static void work(long us) {
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 1000; i++) sink += i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static struct queue q12, q23;
static long checksum;
static long crunch_us = 300;

static void *stage1(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "stage1");
    for (int i = 0; i < ITEMS; i++) {
        work(50);
        q_put(&q12, i);
    }
    q_put(&q12, -1);
    return NULL;
}

static void *stage2(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "stage2");
    for (;;) {
        int v = q_get(&q12);
        if (v < 0) break;
        work(crunch_us);
        q_put(&q23, v * 2);
    }
    q_put(&q23, -1);
    return NULL;
}

static void *stage3(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "stage3");
    for (;;) {
        int v = q_get(&q23);
        if (v < 0) break;
        work(50);
        checksum += v;
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) crunch_us = atol(argv[1]);
    pthread_t t1, t2, t3;
    q_init(&q12);
    q_init(&q23);
    pthread_create(&t1, NULL, stage1, NULL);
    pthread_create(&t2, NULL, stage2, NULL);
    pthread_create(&t3, NULL, stage3, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    pthread_join(t3, NULL);
    printf("pipeline: %d items, checksum %ld\n", ITEMS, checksum);
    return 0;
}
