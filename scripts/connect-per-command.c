/*
 * connect-per-command: the pattern of `rrdtool update --daemon` run once
 * per update (MRTG, Munin, scripts): connect, send one UPDATE, read the
 * reply, close; in a loop, for a fixed time. Prints commands/s and the
 * replies that were not successes.
 *
 *   cc -O2 -pthread -o connect-per-command scripts/connect-per-command.c
 *   for i in $(seq 0 15); do rrdtool create DIR/f$i.rrd --start 1700000000 \
 *       --step 300 DS:x:GAUGE:600:U:U RRA:AVERAGE:0.5:1:1000; done
 *   rrdscale daemon -g -l unix:DIR/s -j DIR/j -w 3600 -f 7200 -b DIR &
 *   ./connect-per-command DIR/s DIR 1 3      # socket, base, clients, seconds
 *
 * Client i updates DIR/fI.rrd, one step later each time: start a fresh
 * daemon and fresh files for each run.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char *socket_path, *base;
static volatile int stop;
static long done[256], failed[256];

static void *client(void *arg) {
    long id = (long)arg, n = 0;
    char line[512], reply[512];
    while (!stop) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        strncpy(a.sun_path, socket_path, sizeof a.sun_path - 1);
        if (fd < 0 || connect(fd, (void *)&a, sizeof a)) {
            perror("connect");
            exit(1);
        }
        int len = snprintf(line, sizeof line, "UPDATE %s/f%ld.rrd %ld:1\n", base, id, 1700000000L + 300 * (n + 1));
        if (write(fd, line, len) != len) {
            perror("write");
            exit(1);
        }
        int got = 0;
        for (;;) {
            ssize_t r = read(fd, reply + got, sizeof reply - got);
            if (r <= 0)
                break;
            got += r;
            if (reply[got - 1] == '\n' || got == sizeof reply)
                break;
        }
        if (got < 1 || reply[0] != '0')
            failed[id]++;
        close(fd);
        n++;
    }
    done[id] = n;
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SOCKET BASE CLIENTS SECONDS\n", argv[0]);
        return 2;
    }
    socket_path = argv[1];
    base = argv[2];
    int clients = atoi(argv[3]);
    double secs = atof(argv[4]);
    if (clients < 1 || clients > 256 || secs <= 0) {
        fprintf(stderr, "1 to 256 clients, a positive time\n");
        return 2;
    }
    pthread_t t[256];
    for (long i = 0; i < clients; i++)
        pthread_create(&t[i], 0, client, (void *)i);
    usleep((useconds_t)(secs * 1e6));
    stop = 1;
    long total = 0, errors = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(t[i], 0);
        total += done[i];
        errors += failed[i];
    }
    printf("%d clients: %.0f commands/s (%ld not successes)\n", clients, total / secs, errors);
    return 0;
}
