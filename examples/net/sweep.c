/* One point of the send-size sweep: a sender streams COUNT buffers of SIZE
 * bytes over loopback to a receiver (a forked child), UDP or TCP.
 *
 *   sweep udp|tcp SIZE COUNT
 *
 * UDP is flow-controlled by the receiver (an acknowledgement every WINDOW
 * datagrams, so none is dropped); TCP is a plain stream ended by one byte
 * back. Prints the sender's time per buffer. Used by sweep.sh, which
 * records each point with `critpath record --net --syscalls` and reads the
 * per-layer cost per buffer from `critpath packets --json`.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int window(long size) {
    long w = (1L << 20) / size;
    return w < 1 ? 1 : w > 64 ? 64 : (int)w;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "udp") && strcmp(argv[1], "tcp"))) {
        fprintf(stderr, "usage: sweep udp|tcp SIZE COUNT\n");
        return 2;
    }
    int udp = strcmp(argv[1], "udp") == 0;
    long size = atol(argv[2]), count = atol(argv[3]);
    if (size < 1 || size > (udp ? 65507 : 1 << 24) || count < 1) {
        fprintf(stderr, "sweep: SIZE must be 1..%d, COUNT >= 1\n", udp ? 65507 : 1 << 24);
        return 2;
    }
    char *buf = calloc(1, size);
    int ls = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
    int big = 4 << 20;
    setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || getsockname(ls, (struct sockaddr *)&a, &al) ||
        (!udp && listen(ls, 1))) {
        perror("sweep: bind");
        return 1;
    }
    int w = window(size);
    pid_t child = fork();
    if (child == 0) { /* receiver */
        if (udp) {
            struct sockaddr_in from;
            socklen_t fl;
            for (long i = 1; i <= count; i++) {
                fl = sizeof from;
                if (recvfrom(ls, buf, size, 0, (struct sockaddr *)&from, &fl) < 0) return 1;
                if (i % w == 0 || i == count) sendto(ls, "a", 1, 0, (struct sockaddr *)&from, fl);
            }
        } else {
            int c = accept(ls, NULL, NULL);
            long want = size * count, got = 0;
            while (got < want) {
                ssize_t n = read(c, buf, size);
                if (n <= 0) return 1;
                got += n;
            }
            if (write(c, "a", 1) != 1) return 1;
        }
        return 0;
    }
    int s = socket(AF_INET, udp ? SOCK_DGRAM : SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&a, sizeof a)) {
        perror("sweep: connect");
        return 1;
    }
    if (!udp) {
        int one = 1;
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    char ack;
    double t0 = now();
    for (long i = 1; i <= count; i++) {
        if (udp) {
            if (send(s, buf, size, 0) != size) { perror("sweep: send"); return 1; }
            if ((i % w == 0 || i == count) && recv(s, &ack, 1, 0) != 1) return 1;
        } else {
            for (long off = 0; off < size;) {
                ssize_t n = write(s, buf + off, size - off);
                if (n <= 0) { perror("sweep: write"); return 1; }
                off += n;
            }
        }
    }
    if (!udp && read(s, &ack, 1) != 1) return 1;
    double t = now() - t0;
    int st = 0;
    waitpid(child, &st, 0);
    printf("sweep: %s %ld B x %ld: %.2f us per buffer, %.1f MB/s\n", argv[1], size, count,
           t / count * 1e6, size * count / t / 1e6);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
