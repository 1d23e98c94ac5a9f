/* UDP request/response over the network stack.
 *
 *   udp_echo server PORT          answers every datagram; exits on "quit"
 *   udp_echo client HOST PORT N   sends N 64-byte requests, waits for each
 *                                 reply, then sends "quit"
 *
 * Used by udp-veth.sh, which runs the two in network namespaces joined by
 * a veth pair, so each request crosses the kernel's UDP/IP path, the veth
 * device and the NET_RX softirq twice.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "server") == 0) {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
        a.sin_addr.s_addr = htonl(INADDR_ANY);
        if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
            perror("bind");
            return 1;
        }
        char buf[2048];
        for (;;) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
            if (n < 0) continue;
            if (n == 4 && memcmp(buf, "quit", 4) == 0) return 0;
            sendto(s, buf, n, 0, (struct sockaddr *)&from, fl);
        }
    }
    if (argc == 5 && strcmp(argv[1], "client") == 0) {
        int s = socket(AF_INET, SOCK_DGRAM, 0);
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3]))};
        inet_pton(AF_INET, argv[2], &to.sin_addr);
        struct timeval tv = {.tv_sec = 1};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        int n = atoi(argv[4]), ok = 0;
        char buf[64] = {0}, back[2048];
        for (int i = 0; i < n; i++) {
            memcpy(buf, &i, sizeof i);
            sendto(s, buf, sizeof buf, 0, (struct sockaddr *)&to, sizeof to);
            if (recv(s, back, sizeof back, 0) == (ssize_t)sizeof buf) ok++;
        }
        sendto(s, "quit", 4, 0, (struct sockaddr *)&to, sizeof to);
        printf("udp_echo: %d/%d replies\n", ok, n);
        return ok == n ? 0 : 1;
    }
    fprintf(stderr, "usage: udp_echo server PORT | udp_echo client HOST PORT N\n");
    return 2;
}
