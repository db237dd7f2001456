/* librrd's C API with good and bad arguments (tests/memcheck.rs).
 *
 * Usage: memcheck DIR. Compiled by the test against the librrd.so.8 it
 * loads at run time (ours or Debian's), run under valgrind with ours.
 * Prints one line per call: its name, its return value (or null/ptr), and
 * whether rrd_get_error() has text (the text follows, for the comparison).
 * Every result is freed as rrd.h says, so that a leak is the library's.
 *
 * The prototypes are declared here (as in rrd.h 1.7.2) so the test needs no
 * development package.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct rrd_blob_t { unsigned long size; unsigned char *ptr; } rrd_blob_t;
typedef union rrd_infoval {
    unsigned long u_cnt; double u_val; char *u_str; int u_int; rrd_blob_t u_blo;
} rrd_infoval_t;
typedef struct rrd_info_t {
    char *key; int type; rrd_infoval_t value; struct rrd_info_t *next;
} rrd_info_t;

void rrd_info_free(rrd_info_t *);
void rrd_freemem(void *);
int rrd_create(int, char **);
int rrd_create_r(const char *, unsigned long, time_t, int, const char **);
int rrd_update(int, char **);
int rrd_update_r(const char *, const char *, int, const char **);
rrd_info_t *rrd_update_v(int, char **);
int rrd_fetch(int, char **, time_t *, time_t *, unsigned long *, unsigned long *, char ***, double **);
int rrd_fetch_r(const char *, const char *, time_t *, time_t *, unsigned long *, unsigned long *, char ***,
                double **);
rrd_info_t *rrd_info(int, char **);
rrd_info_t *rrd_info_r(const char *);
int rrd_lastupdate_r(const char *, time_t *, unsigned long *, char ***, char ***);
time_t rrd_last_r(const char *);
time_t rrd_first_r(const char *, int);
time_t rrd_last(int, char **);
rrd_info_t *rrd_graph_v(int, char **);
int rrd_xport(int, char **, int *, time_t *, time_t *, unsigned long *, unsigned long *, char ***, double **);
int rrd_dump(int, char **);
int rrd_dump_r(const char *, char *);
int rrd_restore(int, char **);
int rrd_tune(int, char **);
int rrd_resize(int, char **);

#include "report.h"

static void report_ptr(const char *name, const void *p) {
    put(name, p ? "ptr" : "null");
}

static void free_strings(char **v, unsigned long n) {
    if (!v) return;
    for (unsigned long i = 0; i < n; i++) free(v[i]);
    free(v);
}

#define ARGV(...) (char *[]){__VA_ARGS__, NULL}
#define ARGC(a) ((int)(sizeof(a) / sizeof(a[0]) - 1))
#define CALL(name, fn, ...)                                         \
    do {                                                            \
        char **a_ = ARGV(__VA_ARGS__);                              \
        report(name, (long)fn(ARGC(((char *[]){__VA_ARGS__, NULL})), a_)); \
    } while (0)

static void fetch(const char *name, int argc, char **argv) {
    time_t s = 0, e = 0;
    unsigned long step = 0, n = 0;
    char **names = NULL;
    double *data = NULL;
    int rc = rrd_fetch(argc, argv, &s, &e, &step, &n, &names, &data);
    report(name, rc);
    if (rc == 0) {
        printf("  %ld %ld %lu %lu %s %g\n", (long)s, (long)e, step, n, names[0], data[0]);
        free_strings(names, n);
        free(data);
    }
}

static void fetch_r(const char *name, const char *file, const char *cf) {
    time_t s = 1600000000, e = 1600003000;
    unsigned long step = 300, n = 0;
    char **names = NULL;
    double *data = NULL;
    int rc = rrd_fetch_r(file, cf, &s, &e, &step, &n, &names, &data);
    report(name, rc);
    if (rc == 0) {
        printf("  %ld %ld %lu %lu %s\n", (long)s, (long)e, step, n, names[1]);
        free_strings(names, n);
        free(data);
    }
}

static void info(const char *name, rrd_info_t *p) {
    report_ptr(name, p);
    int count = 0;
    for (rrd_info_t *q = p; q; q = q->next) count++;
    if (p) printf("  %d entries, first %s\n", count, p->key);
    rrd_info_free(p);
}

static void lastupdate(const char *name, const char *file) {
    time_t last = 0;
    unsigned long n = 0;
    char **names = NULL, **values = NULL;
    int rc = rrd_lastupdate_r(file, &last, &n, &names, &values);
    report(name, rc);
    if (rc == 0) {
        printf("  %ld %lu %s=%s\n", (long)last, n, names[0], values[0]);
        free_strings(names, n);
        free_strings(values, n);
    }
}

static void xport(const char *name, int argc, char **argv) {
    int xsize = 0;
    time_t s = 0, e = 0;
    unsigned long step = 0, cols = 0;
    char **legends = NULL;
    double *data = NULL;
    int rc = rrd_xport(argc, argv, &xsize, &s, &e, &step, &cols, &legends, &data);
    report(name, rc);
    if (rc == 0) {
        printf("  %ld %ld %lu %lu %s\n", (long)s, (long)e, step, cols, legends[0]);
        free_strings(legends, cols);
        free(data);
    }
}

int main(int argc, char **argv) {
    if (argc != 2 || chdir(argv[1]) != 0) return 2;
    const char *defs[] = {"DS:a:GAUGE:600:U:U", "DS:b:COUNTER:600:0:U", "RRA:AVERAGE:0.5:1:20",
                          "RRA:MAX:0.5:2:20"};
    report("create_r", rrd_create_r("m.rrd", 300, 1600000000, 4, defs));
    const char *bad_ds[] = {"DS:a:BOGUS:600:U:U", "RRA:AVERAGE:0.5:1:20"};
    report("create_r bad DS", rrd_create_r("x.rrd", 300, 1600000000, 2, bad_ds));
    report("create_r no RRA", rrd_create_r("x.rrd", 300, 1600000000, 1, defs));
    report("create_r bad dir", rrd_create_r("no/such/dir.rrd", 300, 1600000000, 4, defs));
    CALL("create bad option", rrd_create, "create", "y.rrd", "--bogus", "DS:a:GAUGE:600:U:U");
    CALL("create bad step", rrd_create, "create", "y.rrd", "-s", "x", "DS:a:GAUGE:600:U:U", "RRA:LAST:0.5:1:5");
    CALL("create", rrd_create, "create", "c.rrd", "-b", "1600000000", "DS:a:GAUGE:600:U:U", "RRA:LAST:0.5:1:5");

    char val[64];
    for (int i = 1; i <= 12; i++) {
        snprintf(val, sizeof val, "%d:%d:%d", 1600000000 + 300 * i, i, i * 100);
        const char *v[] = {val};
        report("update_r", rrd_update_r("m.rrd", NULL, 1, v));
    }
    const char *past[] = {"1600000001:1:1"};
    report("update_r past", rrd_update_r("m.rrd", NULL, 1, past));
    const char *junk[] = {"1600009000:abc:1"};
    report("update_r junk", rrd_update_r("m.rrd", NULL, 1, junk));
    const char *few[] = {"1600009000:1"};
    report("update_r too few", rrd_update_r("m.rrd", NULL, 1, few));
    report("update_r missing", rrd_update_r("nope.rrd", NULL, 1, few));
    report("update_r no values", rrd_update_r("m.rrd", NULL, 0, few));
    const char *tmpl[] = {"1600009000:1"};
    report("update_r bad template", rrd_update_r("m.rrd", "zz", 1, tmpl));
    CALL("update", rrd_update, "update", "c.rrd", "1600000300:5");
    CALL("update bad option", rrd_update, "update", "--bogus", "c.rrd", "1600000600:5");
    CALL("update bad time", rrd_update, "update", "c.rrd", "x:5");
    {
        char **a = ARGV("updatev", "c.rrd", "1600000600:6");
        info("update_v", rrd_update_v(3, a));
        char **b = ARGV("updatev", "c.rrd", "1600000600:6");
        info("update_v past", rrd_update_v(3, b));
    }

    fetch("fetch", 6, ARGV("fetch", "m.rrd", "AVERAGE", "-s", "1600000000", "-e", "1600003000"));
    fetch("fetch bad CF", 3, ARGV("fetch", "m.rrd", "NOPE"));
    fetch("fetch bad start", 5, ARGV("fetch", "m.rrd", "AVERAGE", "-s", "yesterdayish"));
    fetch("fetch missing", 3, ARGV("fetch", "nope.rrd", "AVERAGE"));
    fetch_r("fetch_r", "m.rrd", "MAX");
    fetch_r("fetch_r bad CF", "m.rrd", "NOPE");
    fetch_r("fetch_r missing", "nope.rrd", "AVERAGE");

    info("info_r", rrd_info_r("m.rrd"));
    info("info_r missing", rrd_info_r("nope.rrd"));
    info("info", rrd_info(2, ARGV("info", "m.rrd")));
    info("info bad option", rrd_info(3, ARGV("info", "--bogus", "m.rrd")));
    lastupdate("lastupdate_r", "m.rrd");
    lastupdate("lastupdate_r missing", "nope.rrd");
    report("last_r", (long)rrd_last_r("m.rrd"));
    report("last_r missing", (long)rrd_last_r("nope.rrd"));
    report("first_r", (long)rrd_first_r("m.rrd", 1));
    report("first_r bad index", (long)rrd_first_r("m.rrd", 9));
    CALL("last missing", rrd_last, "last", "nope.rrd");

    info("graph_v", rrd_graph_v(8, ARGV("graphv", "-", "-s", "1600000000", "-e", "1600003600",
                                        "DEF:a=m.rrd:a:AVERAGE", "LINE1:a#ff0000", "PRINT:a:AVERAGE:%6.2lf")));
    info("graph_v bad DEF", rrd_graph_v(3, ARGV("graphv", "-", "DEF:a=m.rrd:zz:AVERAGE")));
    info("graph_v bad element", rrd_graph_v(4, ARGV("graphv", "-", "DEF:a=m.rrd:a:AVERAGE", "LINE1:b#ff0000")));
    info("graph_v no args", rrd_graph_v(1, ARGV("graphv")));
    xport("xport", 7, ARGV("xport", "-s", "1600000000", "-e", "1600003000", "DEF:a=m.rrd:a:AVERAGE",
                           "XPORT:a:alpha"));
    xport("xport bad DEF", 3, ARGV("xport", "DEF:a=nope.rrd:a:AVERAGE", "XPORT:a"));
    xport("xport no XPORT", 2, ARGV("xport", "DEF:a=m.rrd:a:AVERAGE"));

    report("dump_r", rrd_dump_r("m.rrd", "m.xml"));
    report("dump_r missing", rrd_dump_r("nope.rrd", "n.xml"));
    CALL("dump bad option", rrd_dump, "dump", "--bogus", "m.rrd");
    CALL("restore", rrd_restore, "restore", "m.xml", "r.rrd");
    CALL("restore exists", rrd_restore, "restore", "m.xml", "r.rrd");
    CALL("restore missing", rrd_restore, "restore", "nope.xml", "s.rrd");
    CALL("tune", rrd_tune, "tune", "m.rrd", "-h", "a:900");
    CALL("tune bad DS", rrd_tune, "tune", "m.rrd", "-h", "zz:900");
    CALL("resize bad RRA", rrd_resize, "resize", "m.rrd", "7", "GROW", "5");
    CALL("resize", rrd_resize, "resize", "m.rrd", "0", "GROW", "5");
    report("dump no args", rrd_dump(1, ARGV("dump")));
    report("restore one arg", rrd_restore(2, ARGV("restore", "m.xml")));
    report("tune no args", rrd_tune(1, ARGV("tune")));
    report("update no args", rrd_update(1, ARGV("update")));
    report("create no args", rrd_create(1, ARGV("create")));

    /* Which librrd this process runs on. */
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[4096], last[4096] = "";
    while (maps && fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (path && strstr(path, "librrd") && strcmp(path, last) != 0) {
            printf("lib %s", path);
            strcpy(last, path);
        }
    }
    if (maps) fclose(maps);
    return 0;
}
