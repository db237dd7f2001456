/* What the C test programs (fileapi.c, memcheck.c) share: one line per
 * call, printed the same way so that tests/common/mod.rs's c_calls reads
 * both. Included after <stdio.h>; declares the librrd error calls it uses
 * (as in rrd.h 1.7.2, so the tests need no development package).
 */
char *rrd_get_error(void);
void rrd_clear_error(void);
int rrd_test_error(void);

/* name, result, error flag and text (line breaks as \n), tab-separated. */
static void put(const char *name, const char *result) {
    const char *e = rrd_get_error();
    printf("%s\t%s\t%d\t", name, result, rrd_test_error());
    for (const char *c = e ? e : "(null)"; *c; c++) {
        if (*c == '\n') fputs("\\n", stdout); else putchar(*c);
    }
    putchar('\n');
    rrd_clear_error();
}

static void report(const char *name, long rc) {
    char r[32];
    snprintf(r, sizeof r, "%ld", rc);
    put(name, r);
}
