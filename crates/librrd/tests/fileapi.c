/* librrd's internal file API and small exported helpers, from C
 * (tests/fileapi.rs): rrd_init, rrd_open (every mode flag), the rrd_t it
 * fills, rrd_read/write/seek/tell, rrd_lock, rrd_flush, rrd_dontneed,
 * rrd_close, rrd_free; rrd_lcd, rrd_reduce_data, rrd_strtod,
 * rrd_strtodbl, rrd_snprintf and rrd_set_error with every argument kind.
 *
 * Usage: fileapi DIR [--null]. Prints one line per call (its name, its
 * result, whether an error text is set, the text), then the data it read.
 * `--null` adds calls with NULL arguments that Debian's librrd crashes on
 * (run on ours only). Every result is freed as the headers say, so that a
 * leak under valgrind is the library's.
 *
 * The types are declared here as rrd.h and rrd_format.h 1.7.2 lay them
 * out (x86-64), so the test needs no development package.
 */
/* The truncation cases are deliberate. */
#pragma GCC diagnostic ignored "-Wformat-truncation"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef union { unsigned long u_cnt; double u_val; } unival;
typedef struct { char cookie[4]; char version[5]; double float_cookie; unsigned long ds_cnt, rra_cnt, pdp_step; unival par[10]; } stat_head_t;
typedef struct { char ds_nam[20]; char dst[20]; unival par[10]; } ds_def_t;
typedef struct { char cf_nam[20]; unsigned long row_cnt, pdp_cnt; unival par[10]; } rra_def_t;
typedef struct { time_t last_up; long last_up_usec; } live_head_t;
typedef struct { char last_ds[30]; unival scratch[10]; } pdp_prep_t;
typedef struct { unival scratch[10]; } cdp_prep_t;
typedef struct { unsigned long cur_row; } rra_ptr_t;
typedef struct rrd_t {
    stat_head_t *stat_head; ds_def_t *ds_def; rra_def_t *rra_def; live_head_t *live_head;
    time_t *legacy_last_up; pdp_prep_t *pdp_prep; cdp_prep_t *cdp_prep; rra_ptr_t *rra_ptr;
    double *rrd_value; void *__mmap_start; long __mmap_size;
} rrd_t;
typedef struct { size_t header_len, file_len, pos; void *pvt; rrd_t *rrd; } rrd_file_t;
typedef struct { int fd; char *file_start; int mm_prot; int mm_flags; } rrd_simple_file_t;

#define RRD_READONLY (1 << 0)
#define RRD_READWRITE (1 << 1)
#define RRD_CREAT (1 << 2)
#define RRD_READAHEAD (1 << 3)
#define RRD_COPY (1 << 4)
#define RRD_EXCL (1 << 5)
#define RRD_READVALUES (1 << 6)
#define RRD_LOCK (1 << 7)

void rrd_set_error(char *, ...);
int rrd_create_r(const char *, unsigned long, time_t, int, const char **);
int rrd_update_r(const char *, const char *, int, const char **);
int rrd_dump_r(const char *, char *);
int rrd_restore(int, char **);
time_t rrd_last_r(const char *);
void rrd_init(rrd_t *);
void rrd_free(rrd_t *);
rrd_file_t *rrd_open(const char *, rrd_t *, unsigned);
int rrd_close(rrd_file_t *);
ssize_t rrd_read(rrd_file_t *, void *, size_t);
ssize_t rrd_write(rrd_file_t *, const void *, size_t);
off_t rrd_seek(rrd_file_t *, off_t, int);
off_t rrd_tell(rrd_file_t *);
int rrd_lock(rrd_file_t *);
void rrd_flush(rrd_file_t *);
void rrd_dontneed(rrd_file_t *, rrd_t *);
long rrd_lcd(long *);
int rrd_reduce_data(int, unsigned long, time_t *, time_t *, unsigned long *, unsigned long *, double **);
double rrd_strtod(const char *, char **);
unsigned int rrd_strtodbl(const char *, char **, double *, const char *);
int rrd_snprintf(char *, size_t, const char *, ...);

#include "report.h"

/* The header as rrd_open left it, through the rrd_t's pointers. */
static void print_header(const rrd_t *rrd, const rrd_file_t *f) {
    const stat_head_t *h = rrd->stat_head;
    printf("  header_len %zu file_len %zu pos %zu\n", f->header_len, f->file_len, f->pos);
    printf("  %s %s %g ds %lu rra %lu step %lu\n", h->cookie, h->version, h->float_cookie, h->ds_cnt,
           h->rra_cnt, h->pdp_step);
    for (unsigned long i = 0; i < h->ds_cnt; i++)
        printf("  ds %s %s %lu %g %g | %s %g %g\n", rrd->ds_def[i].ds_nam, rrd->ds_def[i].dst,
               rrd->ds_def[i].par[0].u_cnt, rrd->ds_def[i].par[1].u_val, rrd->ds_def[i].par[2].u_val,
               rrd->pdp_prep[i].last_ds, rrd->pdp_prep[i].scratch[0].u_val, rrd->pdp_prep[i].scratch[1].u_val);
    for (unsigned long i = 0; i < h->rra_cnt; i++) {
        /* The current row is random (restore and create pick it). */
        printf("  rra %s %lu %lu %g cur_row %s", rrd->rra_def[i].cf_nam, rrd->rra_def[i].row_cnt,
               rrd->rra_def[i].pdp_cnt, rrd->rra_def[i].par[0].u_val,
               rrd->rra_ptr[i].cur_row < rrd->rra_def[i].row_cnt ? "in range" : "OUT OF RANGE");
        for (unsigned long d = 0; d < h->ds_cnt; d++)
            printf(" cdp %g %lu", rrd->cdp_prep[i * h->ds_cnt + d].scratch[0].u_val,
                   rrd->cdp_prep[i * h->ds_cnt + d].scratch[1].u_cnt);
        printf("\n");
    }
    printf("  live %ld %ld legacy %s mmap %s\n", (long)rrd->live_head->last_up, rrd->live_head->last_up_usec,
           rrd->legacy_last_up ? "set" : "null",
           (char *)rrd->stat_head == (char *)rrd->__mmap_start && rrd->__mmap_size == (long)f->file_len
               ? "whole file" : "other");
    const rrd_simple_file_t *s = f->pvt;
    printf("  fd %s start %s rrd %s\n", s->fd >= 0 ? "open" : "closed",
           s->file_start == rrd->__mmap_start ? "= mmap" : "other", f->rrd == rrd ? "= rrd" : "other");
}

/* Opens, reports, and on failure frees as rrdcached does. */
static rrd_file_t *open_report(const char *name, const char *file, rrd_t *rrd, unsigned flags) {
    rrd_init(rrd);
    rrd_file_t *f = rrd_open(file, rrd, flags);
    put(name, f ? "ptr" : "null");
    if (!f) rrd_free(rrd);
    return f;
}

static void write_file(const char *name, const void *bytes, size_t n) {
    FILE *f = fopen(name, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static void copy_prefix(const char *from, const char *to, size_t n, size_t at, const void *patch, size_t plen) {
    FILE *f = fopen(from, "rb");
    char *buf = calloc(1, n);
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    if (patch) memcpy(buf + at, patch, plen);
    write_file(to, buf, got);
    free(buf);
}

static void open_errors(void) {
    rrd_t rrd;
    rrd_file_t *f;
    write_file("empty.rrd", "", 0);
    char text[300];
    memset(text, 'x', sizeof text);
    write_file("text.rrd", text, sizeof text);
    copy_prefix("r.rrd", "short.rrd", 10, 0, NULL, 0);
    copy_prefix("r.rrd", "trunc.rrd", 900, 0, NULL, 0);
    copy_prefix("r.rrd", "nohead.rrd", 300, 0, NULL, 0);
    double other = 1.5;
    copy_prefix("r.rrd", "arch.rrd", 100000, 16, &other, 8);
    copy_prefix("r.rrd", "v9.rrd", 100000, 4, "0009", 5);
    copy_prefix("r.rrd", "v4.rrd", 100000, 4, "0004", 5);
    const char *names[] = {"nope.rrd", "empty.rrd", "text.rrd", "short.rrd", "trunc.rrd", "nohead.rrd",
                           "arch.rrd", "v9.rrd"};
    char name[64];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(name, sizeof name, "open %s", names[i]);
        f = open_report(name, names[i], &rrd, RRD_READONLY);
        if (f) { rrd_close(f); rrd_free(&rrd); }
    }
    f = open_report("open no mode", "r.rrd", &rrd, 0);
    if (f) { rrd_close(f); rrd_free(&rrd); }
    f = open_report("open v4 rw", "v4.rrd", &rrd, RRD_READWRITE);
    if (f) { printf("  version %s\n", rrd.stat_head->version); rrd_close(f); rrd_free(&rrd); }
    f = open_report("open dir", ".", &rrd, RRD_READONLY);
    if (f) { rrd_close(f); rrd_free(&rrd); }
}

/* rrd_read, rrd_seek, rrd_tell and rrd_write on a file opened read-write. */
static void read_write(void) {
    rrd_t rrd;
    rrd_file_t *f = open_report("open rw", "r.rrd", &rrd, RRD_READWRITE | RRD_LOCK);
    if (!f) return;
    print_header(&rrd, f);
    unsigned long rows = 0;
    for (unsigned long i = 0; i < rrd.stat_head->rra_cnt; i++) rows += rrd.rra_def[i].row_cnt;
    size_t n = rows * rrd.stat_head->ds_cnt;
    double *values = malloc(n * sizeof(double));
    report("read all", rrd_read(f, values, n * sizeof(double)));
    double sum = 0;
    unsigned long known = 0;
    for (size_t i = 0; i < n; i++)
        if (!isnan(values[i])) { sum += values[i]; known++; }
    printf("  %lu known sum %.6f tell %ld\n", known, sum, (long)rrd_tell(f));
    report("read at end", rrd_read(f, values, 8));
    report("read zero", rrd_read(f, values, 0));
    report("seek set", rrd_seek(f, 100, SEEK_SET));
    report("tell", rrd_tell(f));
    report("seek cur", rrd_seek(f, -40, SEEK_CUR));
    report("tell", rrd_tell(f));
    report("seek end", rrd_seek(f, -8, SEEK_END));
    report("tell", rrd_tell(f));
    report("read short", rrd_read(f, values, 64));
    report("seek bad whence", rrd_seek(f, 5, 77));
    report("tell", rrd_tell(f));
    report("seek past end", rrd_seek(f, 10, SEEK_END));
    report("read past end", rrd_read(f, values, 8));
    report("write past end", rrd_write(f, values, 8));
    report("seek to last", rrd_seek(f, -16, SEEK_END));
    report("write over end", rrd_write(f, values, 24));
    report("write zero", rrd_write(f, values, 0));
    report("read null", rrd_read(f, NULL, 8));
    report("write null", rrd_write(f, NULL, 8));
    /* A value written at the start of the first archive's current row. */
    double v = 4242.5;
    off_t row = f->header_len + rrd.rra_ptr[0].cur_row * rrd.stat_head->ds_cnt * sizeof(double);
    report("seek row", rrd_seek(f, row, SEEK_SET));
    report("write value", rrd_write(f, &v, sizeof v));
    report("tell past the row's start", rrd_tell(f) - row);
    /* The header changed through its pointer (the mapping is the file's):
     * the last update a second later. */
    rrd.live_head->last_up += 1;
    report("lock again", rrd_lock(f));
    rrd_flush(f);
    rrd_dontneed(f, &rrd);
    rrd_dontneed(NULL, &rrd);
    rrd_dontneed(NULL, NULL);
    rrd_flush(NULL);
    report("close rw", rrd_close(f));
    rrd_free(&rrd);
    rrd_free(NULL);
    printf("  after free %p %p %p\n", (void *)rrd.stat_head, (void *)rrd.live_head, (void *)rrd.rrd_value);
    free(values);

    f = open_report("open values", "r.rrd", &rrd, RRD_READONLY | RRD_READVALUES | RRD_COPY);
    if (f) {
        printf("  pos %zu value %g last %ld values at %s\n", f->pos,
               rrd.rrd_value[rrd.rra_ptr[0].cur_row * rrd.stat_head->ds_cnt], (long)rrd.live_head->last_up,
               (char *)rrd.rrd_value == (char *)rrd.__mmap_start + f->header_len ? "header end" : "other");
        report("write read-only", rrd_write(f, &v, 0));
        report("close ro", rrd_close(f));
        rrd_free(&rrd);
    }
    report("last_r after", (long)rrd_last_r("r.rrd"));
}

/* A second process holding rrdtool's lock: rrd_open with RRD_LOCK fails. */
static void lock_conflict(void) {
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) return;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        rrd_t rrd;
        rrd_init(&rrd);
        rrd_file_t *f = rrd_open("r.rrd", &rrd, RRD_READWRITE | RRD_LOCK);
        char c = f ? 'y' : 'n';
        if (write(to_parent[1], &c, 1) != 1) _exit(1);
        if (read(to_child[0], &c, 1) != 1) _exit(1);
        if (f) rrd_close(f);
        rrd_free(&rrd);
        _exit(0);
    }
    char c;
    if (read(to_parent[0], &c, 1) != 1) return;
    printf("child locked %c\n", c);
    rrd_t rrd;
    rrd_file_t *f = open_report("open locked rw", "r.rrd", &rrd, RRD_READWRITE | RRD_LOCK);
    if (f) { rrd_close(f); rrd_free(&rrd); }
    f = open_report("open locked ro", "r.rrd", &rrd, RRD_READONLY | RRD_LOCK);
    if (f) { rrd_close(f); rrd_free(&rrd); }
    f = open_report("open locked nolock", "r.rrd", &rrd, RRD_READONLY);
    if (f) {
        report("rrd_lock held", rrd_lock(f));
        rrd_close(f);
        rrd_free(&rrd);
    }
    const char *v[] = {"1600009000:1:1"};
    report("update_r locked", rrd_update_r("r.rrd", NULL, 1, v));
    if (write(to_child[1], "x", 1) != 1) return;
    waitpid(pid, NULL, 0);
    close(to_child[0]); close(to_child[1]); close(to_parent[0]); close(to_parent[1]);
}

/* A new file made as rrdtool's create makes it: the header described in
 * malloced memory, rrd_open with RRD_CREAT, the sections written in order. */
static void create_through_open(void) {
    rrd_t src;
    rrd_file_t *in = open_report("open source", "r.rrd", &src, RRD_READONLY);
    if (!in) return;
    unsigned long ds = src.stat_head->ds_cnt, rra = src.stat_head->rra_cnt;
    rrd_t rrd;
    rrd_init(&rrd);
    rrd.stat_head = malloc(sizeof(stat_head_t));
    memcpy(rrd.stat_head, src.stat_head, sizeof(stat_head_t));
    rrd.ds_def = malloc(ds * sizeof(ds_def_t));
    memcpy(rrd.ds_def, src.ds_def, ds * sizeof(ds_def_t));
    rrd.rra_def = malloc(rra * sizeof(rra_def_t));
    memcpy(rrd.rra_def, src.rra_def, rra * sizeof(rra_def_t));
    rrd.live_head = malloc(sizeof(live_head_t));
    memcpy(rrd.live_head, src.live_head, sizeof(live_head_t));
    rrd.pdp_prep = malloc(ds * sizeof(pdp_prep_t));
    memcpy(rrd.pdp_prep, src.pdp_prep, ds * sizeof(pdp_prep_t));
    rrd.cdp_prep = malloc(ds * rra * sizeof(cdp_prep_t));
    memcpy(rrd.cdp_prep, src.cdp_prep, ds * rra * sizeof(cdp_prep_t));
    rrd.rra_ptr = malloc(rra * sizeof(rra_ptr_t));
    memcpy(rrd.rra_ptr, src.rra_ptr, rra * sizeof(rra_ptr_t));
    size_t data_len = in->file_len - in->header_len;
    char *data = malloc(data_len);
    rrd_seek(in, in->header_len, SEEK_SET);
    report("read source data", rrd_read(in, data, data_len));
    rrd_close(in);
    rrd_free(&src);

    rrd_file_t *f = rrd_open("made.rrd", &rrd, RRD_READWRITE | RRD_CREAT);
    put("open creat", f ? "ptr" : "null");
    if (f) {
        printf("  file_len %zu header_len %zu pos %zu\n", f->file_len, f->header_len, f->pos);
        ssize_t w = rrd_write(f, rrd.stat_head, sizeof(stat_head_t));
        w += rrd_write(f, rrd.ds_def, ds * sizeof(ds_def_t));
        w += rrd_write(f, rrd.rra_def, rra * sizeof(rra_def_t));
        w += rrd_write(f, rrd.live_head, sizeof(live_head_t));
        w += rrd_write(f, rrd.pdp_prep, ds * sizeof(pdp_prep_t));
        w += rrd_write(f, rrd.cdp_prep, ds * rra * sizeof(cdp_prep_t));
        w += rrd_write(f, rrd.rra_ptr, rra * sizeof(rra_ptr_t));
        w += rrd_write(f, data, data_len);
        report("write made", w);
        report("close made", rrd_close(f));
    }
    /* Its header still described in rrd: an exclusive create fails. */
    f = rrd_open("made.rrd", &rrd, RRD_READWRITE | RRD_CREAT | RRD_EXCL);
    put("open made excl", f ? "ptr" : "null");
    if (f) rrd_close(f);
    rrd_free(&rrd);
    free(data);
    /* The made file is the source's copy; rrdtool reads it. */
    report("dump made", rrd_dump_r("made.rrd", "made.xml"));
}

static void lcd(const char *name, long *v) {
    long r = rrd_lcd(v);
    printf("%s\t%ld\t", name, r);
    for (long *p = v; *p; p++) printf(" %ld", *p);
    printf("\n");
}

static void reduce(const char *name, int cf, unsigned long cur_step, time_t start, time_t end, unsigned long step,
                   unsigned long ds) {
    unsigned long rows = (end - start) / cur_step;
    double *data = malloc((rows + 2) * ds * sizeof(double));
    for (unsigned long i = 0; i < rows * ds; i++) data[i] = (i % 7 == 3) ? NAN : (double)(i * 3 % 11) - 2.5;
    unsigned long ds_cnt = ds;
    int rc = rrd_reduce_data(cf, cur_step, &start, &end, &step, &ds_cnt, &data);
    report(name, rc);
    if (rc) {
        unsigned long out = (end - start) / step;
        printf("  %ld %ld %lu %lu:", (long)start, (long)end, step, ds_cnt);
        for (unsigned long i = 0; i < out * ds_cnt; i++) printf(" %g", data[i]);
        printf("\n");
    }
    free(data);
}

static void strtod_case(const char *s) {
    char *end = (char *)"sentinel";
    errno = 0;
    double v = rrd_strtod(s, &end);
    long at = strcmp(end, "sentinel") == 0 && end != s ? -1 : (long)(end - s);
    printf("strtod '%s'\t%.17g\t%ld\t%d\n", s, v, at, errno);
}

static void strtodbl_case(const char *s, const char *error) {
    char *end = NULL;
    double v = -1;
    unsigned int rc = rrd_strtodbl(s, &end, &v, error);
    char name[128];
    snprintf(name, sizeof name, "strtodbl '%s' %s", s, error ? error : "(null)");
    char r[96];
    snprintf(r, sizeof r, "%u %.17g %ld", rc, v, end ? (long)(end - s) : -1L);
    put(name, r);
}

static void snprintf_cases(void) {
    char buf[512];
    int n;
#define SN(label, size, ...)                                   \
    do {                                                       \
        memset(buf, 'Z', sizeof buf);                          \
        n = rrd_snprintf(buf, size, __VA_ARGS__);              \
        printf("snprintf %s\t%d\t%s\n", label, n, size ? buf : "-"); \
        n = snprintf(buf, size, __VA_ARGS__);                  \
        printf("libc %s\t%d\t%s\n", label, n, size ? buf : "-"); \
    } while (0)
    SN("ints", sizeof buf, "%d %i %u %ld %lu %lld %x %X %o %c %%", -5, 42, 7u, -123456789012L, 3000000000UL,
       -9LL, 255, 255, 8, 'q');
    SN("strings", sizeof buf, "[%s] [%10s] [%-6s] [%.3s]", "abc", "right", "left", "truncate");
    SN("doubles", sizeof buf, "%f %.2f %10.3lf %-9.1f| %e %.3E %g %G %5.1f%%", 3.14159, -2.005, 1e6 / 7, 0.25,
       12345.678, 0.000123, 1e-5, 1e20, 99.96);
    SN("special", sizeof buf, "%f %f %f %.0f %g", NAN, INFINITY, -INFINITY, 0.5, -0.0);
    SN("many", sizeof buf, "%g %g %g %g %g %g %g %g %g %g %d %d %d %d %d %d %d %s", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0,
       7.0, 8.0, 9.0, 10.5, 1, 2, 3, 4, 5, 6, 7, "end");
    SN("mixed", sizeof buf, "%s=%.4lf (%lu) %s=%e", "in", 1.0 / 3, 17UL, "out", 6.02e23);
    SN("rrdtool print", sizeof buf, "%6.2lf %sB", 1234.5678 / 1000, "k");
    SN("truncated", 8, "%s and %d", "a long string", 12345);
    SN("size zero", 0, "%s", "nothing written");
    SN("width star", sizeof buf, "[%*d] [%.*f]", 6, 42, 3, 2.0 / 3);
    SN("ties", sizeof buf, "%.2f %.1f %.0f %.0f %.3f %.1e %.0e %.2g", 2.675, 0.05, 1.5, 2.5, 1.0005, 0.25, 2.5, 0.125);
    SN("flags", sizeof buf, "%+.3e|%08.2f|%#g|% f|%#.0f|%-12.4G|%+f|%010.3e", 12345.678, -3.14159, 2.0, 1.5, 3.0,
       1e-7, 0.0, -7.5);
    SN("two flags", sizeof buf, "%-+8.1f|%+08.2f", 2.25, 3.5);
    SN("huge", sizeof buf, "[%f] [%e] [%g]", 1e300, 1e300, 1e300);
    SN("huge f", sizeof buf, "before %f after", 1e30);
    SN("int sizes", sizeof buf, "%hd %hhu %lld %zu|%-5d|%05d|%+d|%.3d|%#x|%#o|%ld", 70000, 300, -4LL, (size_t)9, 42,
       42, 42, 7, 255, 8, -1L);
    SN("char width", sizeof buf, "[%5c] [%-3c]", 'x', 'y');
    SN("nulls", sizeof buf, "%s|%p|%.3s", (char *)NULL, (void *)NULL, "abcdef");
    n = rrd_snprintf(NULL, 0, "%d-%s", 12, "xyz");
    printf("snprintf null\t%d\n", n);
}

int main(int argc, char **argv) {
    if (argc < 2 || chdir(argv[1]) != 0) return 2;
    int null_calls = argc > 2 && strcmp(argv[2], "--null") == 0;
    const char *defs[] = {"DS:a:GAUGE:600:U:U", "DS:b:COUNTER:600:0:U", "RRA:AVERAGE:0.5:1:20",
                          "RRA:MAX:0.5:2:20", "RRA:LAST:0.5:3:10"};
    report("create_r", rrd_create_r("m.rrd", 300, 1600000000, 5, defs));
    char val[64];
    for (int i = 1; i <= 30; i++) {
        snprintf(val, sizeof val, "%d:%d.25:%d", 1600000000 + 300 * i, i, i * 1000);
        const char *v[] = {val};
        rrd_update_r("m.rrd", NULL, 1, v);
    }
    /* A restored file: its rows are in a known place (the current row is
     * the last), so the files are the same under both libraries. */
    report("dump_r", rrd_dump_r("m.rrd", "m.xml"));
    report("restore", rrd_restore(3, (char *[]){"restore", "m.xml", "r.rrd", NULL}));
    /* Kept by the library between calls, then changed under it below. */
    const char *v[] = {"1600009300:5:31000"};
    report("update_r", rrd_update_r("r.rrd", NULL, 1, v));

    rrd_t rrd;
    rrd_file_t *f = open_report("open ro lock", "r.rrd", &rrd, RRD_READONLY | RRD_LOCK);
    if (f) {
        print_header(&rrd, f);
        report("close", rrd_close(f));
        /* rrdcached reads the header after rrd_close and before rrd_free? No:
         * it reads before closing; rrd_free after close frees nothing mapped. */
        rrd_free(&rrd);
    }
    read_write();
    /* The library's own update sees the change made through the mapping:
     * one second past the last update is too early for this time. */
    const char *too_early[] = {"1600009301:1:1"};
    report("update_r after mapped write", rrd_update_r("r.rrd", NULL, 1, too_early));
    const char *next[] = {"1600009600:6:32000"};
    report("update_r next", rrd_update_r("r.rrd", NULL, 1, next));
    report("last_r", (long)rrd_last_r("r.rrd"));
    lock_conflict();
    open_errors();
    create_through_open();

    long a1[] = {300, 600, 900, 0};
    lcd("lcd 300 600 900", a1);
    long a2[] = {7, 0};
    lcd("lcd single", a2);
    long a3[] = {12, 18, 8, 0};
    lcd("lcd 12 18 8", a3);
    long a4[] = {-4, 6, 0};
    lcd("lcd negative", a4);
    long a6[] = {86400, 300, 7200, 60, 0};
    lcd("lcd steps", a6);

    for (int cf = 0; cf <= 9; cf++) {
        char name[64];
        snprintf(name, sizeof name, "reduce cf %d", cf);
        reduce(name, cf, 300, 1600000200, 1600007400, 1800, 2);
    }
    reduce("reduce aligned", 0, 300, 1599998400, 1600005600, 1200, 1);
    reduce("reduce uneven factor", 2, 300, 1600000200, 1600009200, 1000, 3);
    reduce("reduce same step", 0, 300, 1600000200, 1600003200, 300, 1);
    reduce("reduce end only", 1, 60, 1600000020, 1600003620, 600, 1);
    reduce("reduce sanity", 0, 300, 1600000300, 1600002050, 1800, 1);

    const char *nums[] = {"1.5", "  -2e3x", "abc", "1e400", "1e-400", ".5", "+", "-", "0x10", "nan", "-inf",
                          "12:34", "  7.25  ", "1.7976931348623157e308", "123456789012345678901234567890",
                          "5e", "5e+", "-.e1", "3.e2", ""};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) strtod_case(nums[i]);
    const char *dbls[] = {"12", "12:34", "abc", "nan", "NaN", "-nan", "inf", "-inf", "infinity", "1.5x", "", " 3",
                          "U", "1e400"};
    for (size_t i = 0; i < sizeof dbls / sizeof dbls[0]; i++) {
        strtodbl_case(dbls[i], "parse");
        strtodbl_case(dbls[i], NULL);
    }
    {
        double d = 0;
        unsigned int rc = rrd_strtodbl("42:rest", NULL, &d, "no endptr");
        printf("strtodbl no endptr\t%u %g\n", rc, d);
    }
    snprintf_cases();

    rrd_set_error("%s has %d values, %.3f avg, %lu rows, %e %g %c", "file.rrd", 42, 2.0 / 3, 600UL, 1e-9, 0.5, 'x');
    put("set_error", "-");
    rrd_set_error("%g %g %g %g %g %g %g %g %g %s %d %d %d %d %d %d", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.5,
                  "s", 1, 2, 3, 4, 5, 6);
    put("set_error many", "-");
    rrd_set_error("plain text");
    put("set_error plain", "-");

    if (null_calls) {
        /* Debian's librrd crashes on these; ours refuses them. */
        report("null open", rrd_open(NULL, &rrd, RRD_READONLY) != NULL);
        report("null rrd", rrd_open("r.rrd", NULL, RRD_READONLY) != NULL);
        rrd_init(&rrd);
        report("creat no header", rrd_open("r.rrd", &rrd, RRD_READWRITE | RRD_CREAT | RRD_EXCL) != NULL);
        report("null read", rrd_read(NULL, val, 8));
        report("null write", rrd_write(NULL, val, 8));
        report("null seek", rrd_seek(NULL, 0, SEEK_SET));
        report("null tell", rrd_tell(NULL));
        report("null lock", rrd_lock(NULL));
        report("null close", rrd_close(NULL));
        rrd_init(NULL);
        report("null lcd", rrd_lcd(NULL));
        long a5[] = {0};
        lcd("lcd empty", a5);
        report("null reduce", rrd_reduce_data(0, 300, NULL, NULL, NULL, NULL, NULL));
        time_t s = 0, e = 600;
        unsigned long st = 300, dc = 1;
        double *nodata = NULL;
        report("reduce zero step", rrd_reduce_data(0, 0, &s, &e, &st, &dc, &nodata));
        report("reduce null data", rrd_reduce_data(0, 300, &s, &e, &st, &dc, &nodata));
        report("null strtod", (long)rrd_strtod(NULL, NULL));
        double d = 0;
        report("null strtodbl", rrd_strtodbl(NULL, NULL, &d, "x"));
        report("null strtodbl out", rrd_strtodbl("1", NULL, NULL, "x"));
        report("null snprintf fmt", rrd_snprintf(val, sizeof val, NULL));
        rrd_set_error(NULL);
        put("null set_error", "-");
    }
    return 0;
}
